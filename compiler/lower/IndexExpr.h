// Int32 thread-IR index arithmetic with C++ operators, so that the layout formulas written once
// in analysis/ (as templates over an integer-like type) evaluate to thread-IR expressions here
// and to integers in the verifier and the layout report. `/` and `%` are floored (the formulas'
// operands are non-negative, where floored and truncated agree); dividing by 1 and taking a
// remainder by 1 fold, nothing else does, so the expressions are the formulas as written.
#pragma once

#include "threadir/ThreadIR.h"

#include <cstdint>

namespace tilec::lower {

struct IndexExpr {
  thir::Expr e;

  static IndexExpr constant(int64_t v) { return {thir::constInt(v, DType::Int32)}; }
  friend IndexExpr apply(thir::BinOp op, IndexExpr a, IndexExpr b) {
    return {thir::binary(op, a.e, b.e)};
  }
  friend IndexExpr operator+(IndexExpr a, IndexExpr b) { return apply(thir::BinOp::Add, a, b); }
  friend IndexExpr operator+(IndexExpr a, int64_t b) { return a + constant(b); }
  friend IndexExpr operator*(IndexExpr a, IndexExpr b) { return apply(thir::BinOp::Mul, a, b); }
  friend IndexExpr operator*(IndexExpr a, int64_t b) { return a * constant(b); }
  friend IndexExpr operator/(IndexExpr a, int64_t b) {
    return b == 1 ? a : apply(thir::BinOp::FloorDiv, a, constant(b));
  }
  friend IndexExpr operator%(IndexExpr a, int64_t b) {
    return b == 1 ? constant(0) : apply(thir::BinOp::Mod, a, constant(b));
  }
  friend IndexExpr operator^(IndexExpr a, IndexExpr b) { return apply(thir::BinOp::BitXor, a, b); }
  friend IndexExpr operator&(IndexExpr a, int64_t b) {
    return apply(thir::BinOp::BitAnd, a, constant(b));
  }
  friend IndexExpr operator>>(IndexExpr a, int64_t b) {
    return apply(thir::BinOp::Shr, a, constant(b));
  }
  friend IndexExpr operator<<(IndexExpr a, int64_t b) {
    return apply(thir::BinOp::Shl, a, constant(b));
  }
};

} // namespace tilec::lower
