// The layout of a Parallel loop whose accesses all go to global memory: which thread runs which
// iterations, and how many consecutive iterations one thread runs as one vector.
//
// Iterations are flattened row-major and dealt to threads in chunks of `vector` consecutive
// iterations, chunk c to thread c % threads, so that a warp touches one contiguous span per
// step (coalesced) and each thread moves `vector * elementBytes <= 16` bytes per access.
#pragma once

#include "tileir/TileIR.h"

#include <string>
#include <vector>

namespace tilec::analysis {

struct ParallelLayout {
  int64_t total = 1;   // product of the extents
  int64_t threads = 1; // block size
  int vector = 1;      // consecutive iterations per thread step
  int64_t chunks() const { return total / vector; }
  int64_t steps() const { return (chunks() + threads - 1) / threads; }
  /// Why the vector width is what it is (for the layout report and --dump-after).
  std::string reason;
  /// Which thread runs which iteration, in words, for the layout report.
  std::string mapping;
};

/// Chooses the layout of `loop` (a Parallel loop) in a block of `threads` threads.
ParallelLayout planParallelLoop(const tile::For &loop, int64_t threads);

/// Whether `e` mentions variable `v`.
bool mentions(const tile::Expr &e, const tile::Var &v);

} // namespace tilec::analysis
