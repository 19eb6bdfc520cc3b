#include "analysis/LayoutAlgebra.h"

#include "target/TargetInfo.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

namespace tilec::analysis {

FragmentMap::FragmentMap(int64_t threads, int64_t slots, int64_t elements)
    : threads_(threads), slots_(slots), elements_(elements),
      element_(static_cast<size_t>(threads * slots), -1) {}

FragmentMap FragmentMap::of(const FragmentLayout &l) {
  FragmentMap m(l.threads, l.slots(), l.total());
  for (int64_t t = 0; t < l.threads; ++t)
    for (int64_t s = 0; s < m.slots_; ++s)
      m.set(t, s, l.elementAt(t, s));
  return m;
}

std::optional<int64_t> FragmentMap::at(int64_t thread, int64_t slot) const {
  int64_t e = element_.at(static_cast<size_t>(thread * slots_ + slot));
  return e < 0 ? std::nullopt : std::optional<int64_t>(e);
}

void FragmentMap::set(int64_t thread, int64_t slot, std::optional<int64_t> element) {
  element_.at(static_cast<size_t>(thread * slots_ + slot)) = element ? *element : -1;
}

std::vector<std::vector<Owner>> FragmentMap::owners() const {
  std::vector<std::vector<Owner>> out(static_cast<size_t>(elements_));
  for (int64_t t = 0; t < threads_; ++t)
    for (int64_t s = 0; s < slots_; ++s)
      if (auto e = at(t, s); e && *e < elements_)
        out[static_cast<size_t>(*e)].push_back({t, s});
  return out;
}

FragmentMap FragmentMap::repeat(int64_t times) const {
  FragmentMap r(threads_, slots_ * times, elements_ * times);
  for (int64_t k = 0; k < times; ++k)
    for (int64_t t = 0; t < threads_; ++t)
      for (int64_t s = 0; s < slots_; ++s)
        if (auto e = at(t, s))
          r.set(t, k * slots_ + s, k * elements_ + *e);
  return r;
}

std::vector<std::optional<int64_t>> FragmentMap::compose(const SharedLayout &shared) const {
  if (shared.rows * (shared.rowBytes / shared.elementBytes) != elements_)
    throw std::logic_error("composing a fragment with a shared layout of another size");
  std::vector<std::optional<int64_t>> out(element_.size());
  for (size_t i = 0; i < element_.size(); ++i)
    if (element_[i] >= 0)
      out[i] = shared.elementOffset(element_[i]);
  return out;
}

std::optional<std::string> verifyCoverage(const FragmentMap &m, int64_t copies) {
  for (int64_t t = 0; t < m.threads(); ++t)
    for (int64_t s = 0; s < m.slots(); ++s)
      if (auto e = m.at(t, s); e && *e >= m.elements())
        return fmt::format("thread {} slot {} holds element {}, outside the buffer", t, s, *e);
  std::vector<std::vector<Owner>> owners = m.owners();
  for (size_t e = 0; e < owners.size(); ++e)
    if (static_cast<int64_t>(owners[e].size()) != copies)
      return fmt::format("element {} is held {} times, expected {}", e, owners[e].size(), copies);
  return std::nullopt;
}

int64_t wavefronts(const std::vector<std::optional<int64_t>> &offsets, const FragmentMap &m,
                   int64_t warp, int64_t slot, int64_t bytesPerLane) {
  std::map<int64_t, std::set<int64_t>> wordsByBank;
  int64_t bytes = 0;
  for (int64_t lane = 0; lane < target::kWarpSize; ++lane) {
    int64_t t = warp * target::kWarpSize + lane;
    if (t >= m.threads())
      break;
    const std::optional<int64_t> &o = offsets[static_cast<size_t>(t * m.slots() + slot)];
    if (!o)
      continue;
    bytes += bytesPerLane;
    for (int64_t w = *o / 4; w <= (*o + bytesPerLane - 1) / 4; ++w)
      wordsByBank[w % target::kSharedMemoryBanks].insert(w);
  }
  int64_t worst = 0;
  for (const auto &[bank, words] : wordsByBank)
    worst = std::max<int64_t>(worst, static_cast<int64_t>(words.size()));
  return std::max(worst, (bytes + 127) / 128);
}

} // namespace tilec::analysis
