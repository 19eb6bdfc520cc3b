// The interpreter's values: a thread's lanes as raw bits in the element type's width, and the
// scalar arithmetic on them (conversions, unary and binary operations, casts), with the
// semantics lowering relies on (C's fixed widths, Python's floored division, PTX's saturating
// float-to-integer conversion). Internal to the interpreter (threadir/Interpreter*.cpp).
#pragma once

#include "threadir/ThreadIR.h"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace tilec::thir::interp {

/// What interpretation stops on; caught once, at the top.
struct Stop : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The lanes of a value, raw bits in the element type's width: up to 16 in place, more (a
/// wgmma's accumulators, up to 128 a thread) on the heap.
class Lanes {
public:
  explicit Lanes(int n = 1) {
    if (n > kInPlace)
      heap_.assign(static_cast<size_t>(n), 0);
  }
  uint64_t &operator[](int i) { return heap_.empty() ? inPlace_[i] : heap_[i]; }
  uint64_t operator[](int i) const { return heap_.empty() ? inPlace_[i] : heap_[i]; }

private:
  static constexpr int kInPlace = 16;
  std::array<uint64_t, kInPlace> inPlace_{};
  std::vector<uint64_t> heap_;
};

/// A value of one thread.
struct Val {
  Val() = default;
  explicit Val(Type t) : type(t), bits(t.lanes) {}
  Type type;
  Lanes bits;
};

bool floating(DType t);
int widthBits(DType t);

double toDouble(uint64_t b, DType t);
/// Rounds to nearest, ties to even.
uint64_t fromDouble(double v, DType t);
/// Sign- or zero-extends the low widthBits(t) bits.
int64_t toInt(uint64_t b, DType t);
uint64_t fromInt(int64_t v, DType t);
/// Float to integer truncates and saturates, NaN gives 0 (PTX's cvt.rzi).
uint64_t castBits(uint64_t b, DType from, DType to);

Val splat(Type t, uint64_t bits);
int64_t scalarInt(const Val &v);

/// One lane of `op` on bits of type `t`.
uint64_t unary(UnOp op, uint64_t a, DType t);
/// One lane of `op` on operands of type `t`, giving bits of type `result`.
uint64_t binary(BinOp op, uint64_t a, uint64_t b, DType t, DType result);

/// The lanes of `v` from / to memory, each widthBits(elem) / 8 bytes, little-endian.
void readLanes(Val &v, const uint8_t *p);
void writeLanes(const Val &v, uint8_t *p);

} // namespace tilec::thir::interp
