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

void ProxyFences::reset(int warps) { unfenced_.assign(static_cast<size_t>(warps), {}); }

void ProxyFences::written(int warp, int64_t begin, int64_t end) {
  auto &ranges = unfenced_[static_cast<size_t>(warp)];
  // Merge with every range it touches or adjoins.
  auto it = ranges.upper_bound(begin);
  if (it != ranges.begin() && std::prev(it)->second >= begin)
    --it;
  while (it != ranges.end() && it->first <= end) {
    begin = std::min(begin, it->first);
    end = std::max(end, it->second);
    it = ranges.erase(it);
  }
  ranges.emplace(begin, end);
}

void ProxyFences::fenced(int warp) { unfenced_[static_cast<size_t>(warp)].clear(); }

std::string ProxyFences::checkAsyncRead(int64_t begin, int64_t end) const {
  for (size_t w = 0; w < unfenced_.size(); ++w) {
    const auto &ranges = unfenced_[w];
    auto it = ranges.upper_bound(begin);
    if (it != ranges.begin() && std::prev(it)->second > begin)
      --it;
    if (it != ranges.end() && it->first < end)
      return fmt::format("a wgmma reads shared bytes [{}, {}) that warp {} wrote at [{}, {}) "
                         "without a fence.proxy.async since",
                         begin, end, w, it->first, it->second);
  }
  return {};
}

} // namespace tilec::thir::interp
