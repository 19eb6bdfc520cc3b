// Layout algebra on explicit maps: a fragment layout spelled out as the element every
// (thread, slot) holds, with the operations layout questions reduce to:
//  - inversion: element -> the (thread, slot) pairs holding it (ownership, replication);
//  - repetition: a layout repeated over an outer dimension (an mma atom over a warp tile, a
//    tile over pipeline stages), each copy in fresh slots of the same threads;
//  - composition with a shared layout: (thread, slot) -> shared byte offset, from which the
//    bank conflicts of moving the fragment through shared memory follow.
// FragmentLayout and SharedLayout are the closed-form layouts the compiler chooses; these maps
// are how they are checked and compared.
#pragma once

#include "analysis/FragmentLayout.h"
#include "analysis/SharedLayout.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilec::analysis {

struct Owner {
  int64_t thread = 0, slot = 0;
  friend bool operator==(const Owner &, const Owner &) = default;
};

class FragmentMap {
public:
  FragmentMap(int64_t threads, int64_t slots, int64_t elements);
  /// The explicit map of a closed-form layout.
  static FragmentMap of(const FragmentLayout &l);

  int64_t threads() const { return threads_; }
  int64_t slots() const { return slots_; }
  int64_t elements() const { return elements_; }
  /// The element (thread, slot) holds, or nullopt for an idle slot.
  std::optional<int64_t> at(int64_t thread, int64_t slot) const;
  void set(int64_t thread, int64_t slot, std::optional<int64_t> element);

  /// Inversion: for every element, the (thread, slot) pairs that hold it, in thread order.
  std::vector<std::vector<Owner>> owners() const;
  /// Repetition: `times` copies along a new outermost dimension; copy k holds elements
  /// k * elements() + e in slots k * slots() + s of the same threads.
  FragmentMap repeat(int64_t times) const;
  /// Composition with `shared` (the same elements, row-major): the shared byte offset of the
  /// element at every (thread, slot), or nullopt for an idle slot.
  std::vector<std::optional<int64_t>> compose(const SharedLayout &shared) const;

private:
  int64_t threads_, slots_, elements_;
  std::vector<int64_t> element_; // threads * slots, -1 when idle
};

/// Checks that `m` covers every element exactly `copies` times (1 for a distributed layout,
/// the replication factor otherwise) and holds nothing outside; returns the first violation.
std::optional<std::string> verifyCoverage(const FragmentMap &m, int64_t copies);

/// Shared-memory wavefronts (passes of the 32 banks of 4 bytes) that one warp needs when every
/// lane accesses `bytesPerLane` bytes at the offsets `compose` gives for slot `slot` (the warp's
/// lanes are threads 32w .. 32w+31): the most distinct 4-byte words any one bank serves, at
/// least one pass per 128 bytes (the rule of cookbook section 7).
int64_t wavefronts(const std::vector<std::optional<int64_t>> &offsets, const FragmentMap &m,
                   int64_t warp, int64_t slot, int64_t bytesPerLane);

} // namespace tilec::analysis
