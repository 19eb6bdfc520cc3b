#include "threadir/InterpreterBlock.h"

#include <fmt/format.h>

namespace tilec::thir::interp {

void Block::reset(int64_t sharedBytes, int threads, int warps, int warpgroups) {
  smem_.assign(static_cast<size_t>(sharedBytes), 0xCD);
  order_.reset(warps);
  fences_.reset(warps);
  liveThreads_ = threads;
  barriers_.clear();
  mbarriers_.clear();
  wgmma_.assign(static_cast<size_t>(warpgroups), WgmmaMeeting{});
  for (WgmmaMeeting &m : wgmma_) {
    m.group.acc.resize(128);
    m.group.clear.resize(128);
  }
}

void Block::checkWrite(int64_t offset, int64_t n, const char *what) const {
  for (size_t g = 0; g < wgmma_.size(); ++g)
    for (const std::vector<ByteRange> &reads : wgmma_[g].inFlight)
      for (const ByteRange &r : reads)
        if (offset < r.end && r.begin < offset + n)
          throw Stop(fmt::format("{} to shared bytes [{}, {}) while a wgmma group of warpgroup {} "
                                 "in flight reads [{}, {})",
                                 what, offset, offset + n, g, r.begin, r.end));
}

void Block::wgmmaRetire(int group, int pending) {
  auto &inFlight = wgmma_[static_cast<size_t>(group)].inFlight;
  if (static_cast<int>(inFlight.size()) > pending)
    inFlight.erase(inFlight.begin(), inFlight.end() - pending);
}

uint8_t *Block::store(int warp, int64_t offset, int64_t n) {
  uint8_t *p = shared().at(offset, n);
  checkWrite(offset, n, "a store");
  order_.forget(offset, offset + n);
  fences_.written(warp, offset, offset + n);
  if (!mbarriers_.empty()) {
    auto it = mbarriers_.lower_bound(offset - 7);
    if (it != mbarriers_.end() && it->first < offset + n)
      throw Stop(fmt::format("a store to shared bytes [{}, {}) overwrites the mbarrier at byte {}",
                             offset, offset + n, it->first));
  }
  return p;
}

void Block::checkRead(int warp, int64_t offset, int64_t n) const {
  if (std::string error = order_.checkRead(warp, offset, offset + n); !error.empty())
    throw Stop(error);
}

void Block::tmaWritten(int64_t offset, int64_t n, int64_t barrier) {
  order_.tmaWrite(offset, offset + n, barrier, mbarrier(barrier, "a TMA load's completion").phase);
}

void Block::completeIfDue(NamedBarrier &b) {
  const int expected = b.threads ? b.threads : liveThreads_;
  if (b.arrived > 0 && b.arrived >= expected) {
    if (b.arrived > expected)
      throw Stop(fmt::format("{} threads arrived at a barrier of {}", b.arrived, expected));
    b.arrived = 0;
    ++b.generation;
    order_.barrierPassed(b.warps);
    b.warps.clear();
  }
}

void Block::barrierArrive(int warp, int id, int threads, int count) {
  NamedBarrier &b = barriers_[id];
  if (b.arrived > 0 && b.threads != threads)
    throw Stop(fmt::format("barrier {} used with {} threads while it waits for {}", id, threads,
                           b.threads));
  b.threads = threads;
  b.arrived += count;
  b.warps.push_back(warp);
  completeIfDue(b);
}

void Block::barrierSync(int warp, int id, int threads, int count) {
  const uint64_t generation = barriers_[id].generation;
  barrierArrive(warp, id, threads, count);
  const NamedBarrier &b = barriers_[id];
  scheduler.waitUntil(
      warp, [&] { return b.generation != generation; },
      [&] {
        return fmt::format("barrier {} ({} of {} threads arrived)", id, b.arrived,
                           b.threads ? b.threads : liveThreads_);
      });
}

void Block::warpReturned(int count) {
  liveThreads_ -= count;
  for (auto &[id, b] : barriers_)
    if (b.threads == 0)
      completeIfDue(b);
}

void Block::mbarrierInit(int64_t offset, int64_t count) {
  if (offset % 8 != 0)
    throw Stop(fmt::format("an mbarrier at shared byte {}, not 8-byte aligned", offset));
  shared().at(offset, 8);
  if (count < 1 || count >= (int64_t{1} << 20))
    throw Stop(fmt::format("an mbarrier initialized with {} arrivals", count));
  mbarriers_[offset] = Mbarrier{count, count, 0, 0};
}

Block::Mbarrier &Block::mbarrier(int64_t offset, const char *what) {
  auto it = mbarriers_.find(offset);
  if (it == mbarriers_.end())
    throw Stop(
        fmt::format("{} on shared byte {}, where no mbarrier was initialized", what, offset));
  return it->second;
}

void Block::completeIfDue(int64_t offset, Mbarrier &b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.pending = b.count;
    order_.phaseCompleted(offset, b.phase);
  }
}

void Block::mbarrierArrive(int warp, int64_t offset, int64_t txBytes) {
  Mbarrier &b = mbarrier(offset, "an arrival");
  order_.arrive(warp, offset);
  b.tx += txBytes;
  if (b.pending == 0)
    throw Stop(fmt::format("an arrival on the mbarrier at byte {} beyond the {} of its phase",
                           offset, b.count));
  --b.pending;
  completeIfDue(offset, b);
}

void Block::mbarrierCompleteTx(int64_t offset, int64_t bytes) {
  Mbarrier &b = mbarrier(offset, "an asynchronous copy's completion");
  b.tx -= bytes;
  completeIfDue(offset, b);
}

void Block::mbarrierWait(int warp, const std::vector<std::pair<int64_t, int64_t>> &waits) {
  for (const auto &[offset, parity] : waits)
    mbarrier(offset, "a wait");
  auto done = [&](int64_t offset, int64_t parity) {
    return (mbarriers_.at(offset).phase & 1) != (parity & 1);
  };
  scheduler.waitUntil(
      warp,
      [&] {
        for (const auto &[offset, parity] : waits)
          if (!done(offset, parity))
            return false;
        return true;
      },
      [&] {
        for (const auto &[offset, parity] : waits)
          if (!done(offset, parity)) {
            const Mbarrier &b = mbarriers_.at(offset);
            return fmt::format("the mbarrier at byte {} (parity {}; phase {}, {} of {} arrivals "
                               "pending, {} transaction bytes)",
                               offset, parity & 1, b.phase, b.pending, b.count, b.tx);
          }
        return std::string("nothing");
      });
  for (const auto &[offset, parity] : waits)
    order_.waited(warp, offset, mbarriers_.at(offset).phase);
}

void Block::wgmmaMeet(int warp, int group, const Node *node, const Wgmma &w) {
  WgmmaMeeting &m = wgmma_[static_cast<size_t>(group)];
  if (m.arrived > 0 && m.node != node)
    throw Stop(fmt::format("the warps of warpgroup {} issue different wgmma groups", group));
  m.node = node;
  if (++m.arrived < 4) {
    const uint64_t generation = m.generation;
    scheduler.waitUntil(
        warp, [&] { return m.generation != generation; },
        [&] {
          return fmt::format("the other warps of warpgroup {} at a wgmma ({} of 4 there)", group,
                             m.arrived);
        });
    return;
  }
  for (size_t i = 0; i < w.instrs.size(); ++i)
    for (size_t t = i * 128 + 1; t < i * 128 + 128; ++t)
      if ((!w.aInRegisters && m.group.aDesc[t] != m.group.aDesc[i * 128]) ||
          m.group.bDesc[t] != m.group.bDesc[i * 128])
        throw Stop(fmt::format("warpgroup {}'s threads disagree on a wgmma descriptor", group));
  m.inFlight.push_back(runWgmmaGroup(w, shared(), m.group));
  // Every warp of the warpgroup must know its operands loaded.
  for (const ByteRange &r : m.inFlight.back()) {
    for (int v = 4 * group; v < 4 * group + 4; ++v)
      checkRead(v, r.begin, r.end - r.begin);
    if (std::string error = fences_.checkAsyncRead(r.begin, r.end); !error.empty())
      throw Stop(error);
  }
  wgmmaRetire(group, w.pending);
  m.arrived = 0;
  m.node = nullptr;
  ++m.generation;
}

} // namespace tilec::thir::interp
