// Layout inference for fragments (register tiles spread over a block's threads) on the paths
// that need no tensor core: elementwise Parallel loops, reductions, copies.
//
// Two layouts exist today:
//  - Distributed ("free"): the fragment's elements, flattened row-major, are dealt to threads in
//    chunks of `vector` consecutive elements, chunk c to thread c % threads at step c / threads.
//    A warp's chunks are contiguous, so copies to and from global memory coalesce and move
//    `vector` elements per access. Slot (step * vector + lane) of thread t holds flat element
//    ((step * threads + t) * vector + lane).
//  - Replicated: every thread holds every element (slot = flat index). Reduction results are
//    replicated, so any thread can read any row's value without communication.
//
// Propagation ("common"): fragments that meet in a Parallel loop or a fragment-to-fragment copy
// share one layout; a group that holds a reduction's result is replicated; every other group is
// distributed, with the widest vector every global access of the group allows (16 bytes).
// alloc_local buffers are per-thread arrays, laid out like replicated fragments.
#pragma once

#include "support/Diagnostics.h"
#include "tileir/TileIR.h"

#include <map>
#include <string>
#include <vector>

namespace tilec::analysis {

struct FragmentLayout {
  enum class Kind { Distributed, Replicated };
  Kind kind = Kind::Distributed;
  std::vector<int64_t> shape;
  int64_t threads = 1;
  int vector = 1;
  int64_t total() const;
  int64_t chunks() const { return total() / vector; }
  int64_t steps() const { return (chunks() + threads - 1) / threads; }
  /// Registers one thread holds for the buffer.
  int64_t slots() const { return kind == Kind::Replicated ? total() : steps() * vector; }
  /// The operation that fixed the layout, for the report ("reduce_max at 12:9", "free").
  std::string fixedBy;
  SourceLoc fixedAt;
  /// Why the vector width is what it is.
  std::string vectorReason;
  bool sameAs(const FragmentLayout &o) const {
    return kind == o.kind && shape == o.shape && threads == o.threads && vector == o.vector;
  }
};

/// Layouts of every fragment and local buffer of `k`, by buffer id. Reports an error (and
/// returns false) for a fragment whose layout is not decided by these rules.
bool inferFragmentLayouts(const tile::Kernel &k, DiagnosticEngine &diags,
                          std::map<int, FragmentLayout> &out);

} // namespace tilec::analysis
