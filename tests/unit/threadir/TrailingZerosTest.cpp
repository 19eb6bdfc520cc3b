// Known trailing zeros of thread-IR integer expressions: every rule against expressions whose
// low bits are known by construction, and a brute-force check that the bound holds for every
// thread of random offset formulas.
#include "threadir/TrailingZeros.h"

#include <doctest/doctest.h>

#include <bit>
#include <functional>
#include <random>

using namespace tilec;
using namespace tilec::thir;

namespace {

Expr c32(int64_t v) { return constInt(v, DType::Int32); }
Expr tid() { return special(Special::ThreadIdxX); }
Expr bin(BinOp op, Expr a, Expr b) { return binary(op, std::move(a), std::move(b)); }

/// A swizzled 128-byte-line offset as lowering writes it for one element of a row.
Expr swizzled(Expr o) {
  Expr chunk = bin(BinOp::Shl, bin(BinOp::BitAnd, bin(BinOp::Shr, o, c32(7)), c32(7)), c32(4));
  return bin(BinOp::Add, bin(BinOp::BitXor, bin(BinOp::BitAnd, o, c32(-16)), chunk),
             bin(BinOp::BitAnd, o, c32(15)));
}

} // namespace

TEST_CASE("constants, products and shifts") {
  TrailingZeros tz;
  CHECK(tz.of(c32(48)) == 4);
  CHECK(tz.of(c32(1)) == 0);
  CHECK(tz.of(c32(0)) == 32); // every bit of an int32 zero
  CHECK(tz.of(constInt(0, DType::Int64)) == 64);
  CHECK(tz.of(c32(-16)) == 4);
  CHECK(tz.of(tid()) == 0);
  CHECK(tz.of(bin(BinOp::Mul, tid(), c32(12))) == 2);
  CHECK(tz.of(bin(BinOp::Mul, bin(BinOp::Mul, tid(), c32(4)), c32(8))) == 5);
  CHECK(tz.of(bin(BinOp::Shl, tid(), c32(7))) == 7);
  CHECK(tz.of(bin(BinOp::Shr, bin(BinOp::Shl, tid(), c32(7)), c32(3))) == 4);
  CHECK(tz.of(bin(BinOp::Shr, tid(), c32(3))) == 0);
  CHECK(tz.of(bin(BinOp::Shl, tid(), tid())) == 0); // a shift by a run-time amount
}

TEST_CASE("sums, bit operations, division and remainder") {
  TrailingZeros tz;
  Expr t64 = bin(BinOp::Mul, tid(), c32(64));
  CHECK(tz.of(bin(BinOp::Add, t64, c32(16))) == 4);
  CHECK(tz.of(bin(BinOp::Sub, t64, c32(8))) == 3);
  CHECK(tz.of(bin(BinOp::BitXor, t64, c32(32))) == 5);
  CHECK(tz.of(bin(BinOp::BitOr, t64, c32(2))) == 1);
  CHECK(tz.of(bin(BinOp::BitAnd, tid(), c32(-8))) == 3);
  CHECK(tz.of(bin(BinOp::BitAnd, t64, c32(15))) == 6); // the known low bits survive
  CHECK(tz.of(bin(BinOp::FloorDiv, t64, c32(4))) == 4);
  CHECK(tz.of(bin(BinOp::Div, t64, c32(128))) == 0);
  CHECK(tz.of(bin(BinOp::FloorDiv, t64, c32(3))) == 0);
  CHECK(tz.of(bin(BinOp::Mod, t64, c32(16))) == 4);
  CHECK(tz.of(bin(BinOp::Mod, bin(BinOp::Mul, tid(), c32(4)), c32(128))) == 2);
  CHECK(tz.of(bin(BinOp::Mod, t64, c32(48))) == 0);
  CHECK(tz.of(bin(BinOp::Min, t64, c32(8))) == 3);
  CHECK(tz.of(select(bin(BinOp::Lt, tid(), c32(3)), t64, c32(4))) == 2);
  CHECK(tz.of(unary(UnOp::Neg, t64)) == 6);
  CHECK(tz.of(cast(t64, Type{DType::Int64, 1})) == 6);
  CHECK(tz.of(cast(constFloat(4.0), Type{DType::Int32, 1})) == 0);
  CHECK(tz.of(var(3, Type{DType::Int32, 1})) == 0);
  CHECK(tz.of(constFloat(0.0)) == 0);
}

TEST_CASE("a swizzled element offset is as aligned as its element's place in the chunk") {
  TrailingZeros tz;
  // Row tid / 4, 32 bytes per thread of a 128-byte line: the first element of the run is
  // 16-byte aligned (the swizzle moves 16-byte chunks), the second (2 bytes further) only
  // 2-byte aligned.
  Expr row = bin(BinOp::Mul, bin(BinOp::FloorDiv, tid(), c32(4)), c32(128));
  Expr col = bin(BinOp::Mul, bin(BinOp::Mod, tid(), c32(4)), c32(32));
  CHECK(tz.of(swizzled(bin(BinOp::Add, row, col))) == 4);
  CHECK(tz.of(swizzled(bin(BinOp::Add, bin(BinOp::Add, row, col), c32(2)))) == 1);
  CHECK(tz.of(swizzled(bin(BinOp::Add, bin(BinOp::Add, row, col), c32(16)))) == 4);
}

TEST_CASE("the bound holds for every thread of random formulas") {
  std::mt19937 rng(7);
  std::function<Expr(int)> gen;
  std::function<int64_t(const Expr &, int64_t)> eval;
  static constexpr BinOp ops[] = {BinOp::Add,      BinOp::Sub,   BinOp::Mul, BinOp::BitAnd,
                                  BinOp::BitXor,   BinOp::BitOr, BinOp::Shl, BinOp::Shr,
                                  BinOp::FloorDiv, BinOp::Mod};
  gen = [&](int depth) -> Expr {
    if (depth == 0 || rng() % 4 == 0)
      return rng() % 2 ? tid() : c32(static_cast<int64_t>(rng() % 64) << (rng() % 6));
    BinOp op = ops[rng() % std::size(ops)];
    if (op == BinOp::Shl || op == BinOp::Shr)
      return bin(op, gen(depth - 1), c32(rng() % 8));
    if (op == BinOp::FloorDiv || op == BinOp::Mod)
      return bin(op, gen(depth - 1), c32(int64_t{1} << (rng() % 6)));
    return bin(op, gen(depth - 1), gen(depth - 1));
  };
  eval = [&](const Expr &e, int64_t t) -> int64_t {
    if (auto *c = std::get_if<ConstInt>(&e->op))
      return c->value;
    if (std::holds_alternative<SpecialReg>(e->op))
      return t;
    auto &b = std::get<Binary>(e->op);
    int64_t x = eval(b.a, t), y = eval(b.b, t);
    int64_t r = 0;
    switch (b.op) {
    case BinOp::Add:
      r = x + y;
      break;
    case BinOp::Sub:
      r = x - y;
      break;
    case BinOp::Mul:
      r = x * y;
      break;
    case BinOp::BitAnd:
      r = x & y;
      break;
    case BinOp::BitXor:
      r = x ^ y;
      break;
    case BinOp::BitOr:
      r = x | y;
      break;
    case BinOp::Shl:
      r = static_cast<int64_t>(static_cast<uint64_t>(x) << y);
      break;
    case BinOp::Shr:
      r = x >> y;
      break;
    case BinOp::FloorDiv:
      r = x >= 0 ? x / y : -((-x + y - 1) / y);
      break;
    case BinOp::Mod:
      r = ((x % y) + y) % y;
      break;
    default:
      FAIL("unexpected op");
    }
    return static_cast<int32_t>(static_cast<uint32_t>(r)); // int32 wrap-around
  };
  for (int trial = 0; trial < 400; ++trial) {
    Expr e = gen(5);
    TrailingZeros tz;
    int bound = tz.of(e);
    for (int64_t t = 0; t < 256; ++t) {
      auto v = static_cast<uint32_t>(eval(e, t));
      int actual = v == 0 ? 32 : std::countr_zero(v);
      REQUIRE(actual >= bound);
    }
  }
}
