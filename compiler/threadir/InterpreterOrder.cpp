#include "threadir/InterpreterOrder.h"

#include <fmt/format.h>

#include <algorithm>

namespace tilec::thir::interp {

void AsyncWriteOrder::reset(int warps) {
  warps_.assign(static_cast<size_t>(warps), {});
  released_.clear();
  writes_.clear();
}

void AsyncWriteOrder::merge(Knowledge &into, const Knowledge &from) {
  for (const auto &[barrier, phases] : from)
    into[barrier] = std::max(into[barrier], phases);
}

void AsyncWriteOrder::tmaWrite(int64_t begin, int64_t end, int64_t barrier, int64_t phase) {
  forget(begin, end);
  writes_.push_back({begin, end, barrier, phase});
}

void AsyncWriteOrder::forget(int64_t begin, int64_t end) {
  if (!writes_.empty())
    std::erase_if(writes_, [&](const Write &w) { return w.begin < end && begin < w.end; });
}

void AsyncWriteOrder::arrive(int warp, int64_t barrier) {
  merge(released_[barrier].pending, warps_[static_cast<size_t>(warp)]);
}

void AsyncWriteOrder::phaseCompleted(int64_t barrier, int64_t phases) {
  Released &r = released_[barrier];
  r.completed = std::move(r.pending);
  r.pending.clear();
  r.completed[barrier] = std::max(r.completed[barrier], phases);
}

void AsyncWriteOrder::waited(int warp, int64_t barrier, int64_t phases) {
  Knowledge &k = warps_[static_cast<size_t>(warp)];
  if (auto it = released_.find(barrier); it != released_.end())
    merge(k, it->second.completed);
  k[barrier] = std::max(k[barrier], phases);
}

void AsyncWriteOrder::barrierPassed(const std::vector<int> &warps) {
  Knowledge all;
  for (int w : warps)
    merge(all, warps_[static_cast<size_t>(w)]);
  for (int w : warps)
    warps_[static_cast<size_t>(w)] = all;
}

std::string AsyncWriteOrder::checkRead(int warp, int64_t begin, int64_t end) const {
  const Knowledge &k = warps_[static_cast<size_t>(warp)];
  for (const Write &w : writes_) {
    if (!(w.begin < end && begin < w.end))
      continue;
    auto it = k.find(w.barrier);
    if (it == k.end() || it->second <= w.phase)
      return fmt::format("warp {} reads shared bytes [{}, {}) before it knows the TMA load "
                         "writing [{}, {}) complete (phase {} of the mbarrier at byte {})",
                         warp, begin, end, w.begin, w.end, w.phase, w.barrier);
  }
  return {};
}

} // namespace tilec::thir::interp
