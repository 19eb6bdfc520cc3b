// What the interpreter's sm_90a instructions do to memory and registers, as the PTX ISA and the
// cookbook (docs: hopper-cookbook.md sections 3-5, 7) lay it out: a TMA box copied into shared
// memory through its swizzle, and a warpgroup's wgmma group with its operands read through
// shared-memory descriptors (K-major and MN-major, every swizzle) or, for A, from the threads'
// registers. Swizzles follow the absolute shared-window address, as the hardware's do.
// Internal to the interpreter (threadir/Interpreter*.cpp).
#pragma once

#include "threadir/InterpreterValue.h"

#include <cstdint>
#include <vector>

namespace tilec::thir::interp {

/// The kernel's dynamic shared memory, at shared-window address `windowBase` (what
/// SharedAddress gives and descriptors hold).
struct SharedView {
  uint8_t *data = nullptr;
  int64_t bytes = 0;
  int64_t windowBase = 0;
  /// Bounds-checked: `n` bytes at byte offset `offset` (Stop outside).
  uint8_t *at(int64_t offset, int64_t n) const;
};

/// Byte `address` of the shared window as a swizzle of `swizzleBytes` (0, 32, 64 or 128) places
/// it: the 16-byte chunk index XORed with the 128-byte line index (PTX ISA 5.5.7).
int64_t swizzleAddress(int64_t address, int swizzleBytes);

/// A tensor map as the launch encoded it: its tensor, extents (innermost first), byte strides of
/// dimensions 1.., box and swizzle.
struct TensorMapView {
  const std::vector<uint8_t> *tensor = nullptr;
  int elementBytes = 2;
  std::vector<int64_t> dims, strides;
  std::vector<int> box;
  int swizzleBytes = 0;
  int64_t boxBytes() const;
};

/// cp.async.bulk.tensor of the box at `coords` into shared byte `dst`: elements outside the
/// tensor are written as zero. Returns the bytes it completes on its mbarrier (the whole box).
int64_t copyTmaBox(const TensorMapView &map, const std::vector<int64_t> &coords,
                   const SharedView &smem, int64_t dst);

/// One warpgroup's operands of a wgmma group, by thread of the warpgroup (0..127).
struct WgmmaGroup {
  std::vector<Val> acc;
  std::vector<char> clear;
  /// Per instruction: A's four registers in each thread (when A is in registers).
  std::vector<std::vector<Val>> aRegisters;
  /// Per instruction i, thread t's at [128 i + t]: the same in every thread (the caller checks).
  std::vector<uint64_t> aDesc, bDesc;
};

/// Bytes [begin, end) of shared memory (offsets from its start).
struct ByteRange {
  int64_t begin = 0, end = 0;
};

/// D = A B + D for each instruction of `w` in order, into `g.acc` (lanes cleared first in the
/// threads whose `clear` holds). Products are exact and summed in double per instruction.
/// Returns the shared bytes the group read: from the first to the last byte of each operand.
std::vector<ByteRange> runWgmmaGroup(const Wgmma &w, const SharedView &smem, WgmmaGroup &g);

} // namespace tilec::thir::interp
