// A reference interpreter of thread IR on the CPU: runs a kernel's blocks one after the other,
// and the warps of a block each on a thread of its own, one at a time (InterpreterSchedule.h):
// a warp's threads in lockstep (each statement for every active thread before the next; branches
// and loops mask threads off), so that lane exchanges (shuffles, MFMA, ldmatrix, mma.sync) see
// every lane of a warp at once; a warp runs until it waits at a barrier, on an mbarrier or for
// its warpgroup at a wgmma, and a block whose warps all wait is reported as deadlocked. It checks
// lowering's numerics on the CPU: AMD targets (no GPU runs that code here), sm_80 code, and
// sm_90a's warp-specialized pipelines (TMA boxes through their swizzles, mbarrier phases and
// transaction bytes, wgmma groups with shared-memory descriptors or A in registers). Asynchronous
// copies and wgmma groups complete as they are issued, so two checks stand in for the hazards
// that would hide: a write to shared bytes that a wgmma group in flight reads (before the
// wait_group covering it), and a read of bytes a TMA load wrote by a warp that does not know the
// load complete (InterpreterOrder.h); and, memory being coherent there, a wgmma's read of bytes
// that threads stored without a fence.proxy.async since is an error. Memory accesses are
// bounds-checked: a load or store outside its tensor or the shared memory is an error, and so is
// a store over an mbarrier.
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
  /// Multiprocessors a persistent kernel is launched on (it runs min(its grid's blocks, this x
  /// Kernel::persistentBlocksPerSM) blocks): few, so that each block walks several tiles.
  int multiprocessors = 2;
  /// false: launch as where the tensor maps could not be encoded (TmaEnabled = 0), so that the
  /// kernel copies without TMA. TMA is also off where a map's byte stride is not a multiple of 16.
  bool tma = true;
  /// Warps run until they wait (the default), or take turns after every statement: two
  /// interleavings of the same program, which must give the same results where the program
  /// orders its warps' accesses to shared memory.
  bool interleaveStatements = false;
};

/// Runs every block of `k`'s grid (its grid expressions evaluated over `launch.scalars`).
/// Returns nullopt, or what it could not run or what went wrong (an out-of-bounds access, an
/// operation it does not implement).
std::optional<std::string> interpret(const Kernel &k, const InterpreterLaunch &launch);

} // namespace tilec::thir
