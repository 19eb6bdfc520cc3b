// A reference interpreter of thread IR on the CPU: runs a kernel's blocks one after the other,
// the threads of a block in lockstep (each statement for every active thread before the next;
// branches and loops mask threads off), so that barriers hold by construction and lane exchanges
// (shuffles, MFMA, ldmatrix, mma.sync) see every lane of a warp at once. It checks lowering's
// numerics on the CPU (AMD targets, where no GPU runs the code here, and sm_80 code without
// pipelines), on the subset of thread IR without asynchronous copies: no cp.async, TMA,
// mbarriers or wgmma. Memory accesses are bounds-checked: a load or store outside its tensor or
// the shared memory is an error.
#pragma once

#include "threadir/ThreadIR.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tilec::thir {

struct InterpreterLaunch {
  /// By parameter index: a Tensor's bytes (read and written in place), else empty.
  std::vector<std::vector<uint8_t> *> tensors;
  /// By parameter index: the value of a Dim or integer Scalar parameter (floats as their value).
  std::vector<double> scalars;
  /// Lanes of a warp: 32 on NVIDIA targets, 64 (a wavefront) on AMD.
  int warpSize = 32;
};

/// Runs every block of `k`'s grid (its grid expressions evaluated over `launch.scalars`).
/// Returns nullopt, or what it could not run or what went wrong (an out-of-bounds access, an
/// operation it does not implement).
std::optional<std::string> interpret(const Kernel &k, const InterpreterLaunch &launch);

} // namespace tilec::thir
