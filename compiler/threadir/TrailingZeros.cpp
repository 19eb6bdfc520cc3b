#include "threadir/TrailingZeros.h"

#include <algorithm>
#include <bit>

namespace tilec::thir {
namespace {

constexpr int kAll = 64;

/// log2 of a positive power-of-two constant, or nothing.
std::optional<int> powerOfTwo(const Node &n) {
  auto *c = std::get_if<ConstInt>(&n.op);
  if (!c || c->value <= 0 || !std::has_single_bit(static_cast<uint64_t>(c->value)))
    return std::nullopt;
  return std::countr_zero(static_cast<uint64_t>(c->value));
}

std::optional<int64_t> constantOf(const Node &n) {
  if (auto *c = std::get_if<ConstInt>(&n.op))
    return c->value;
  return std::nullopt;
}

} // namespace

int TrailingZeros::of(const Expr &e) {
  if (!e)
    return 0;
  if (auto it = cache_.find(e.get()); it != cache_.end())
    return it->second.zeros;
  int tz = 0;
  if (e->type.lanes == 1 && isInteger(e->type.elem))
    tz = std::min(compute(*e), dtypeBits(e->type.elem) == 64 ? kAll : dtypeBits(e->type.elem));
  cache_.emplace(e.get(), Known{e, tz});
  return tz;
}

int TrailingZeros::compute(const Node &n) {
  if (auto *c = std::get_if<ConstInt>(&n.op))
    return c->value == 0 ? kAll : std::countr_zero(static_cast<uint64_t>(c->value));
  if (auto *c = std::get_if<Cast>(&n.op))
    // Extension keeps the low bits, truncation keeps as many as fit (of() caps them).
    return isInteger(c->a->type.elem) ? of(c->a) : 0;
  if (auto *s = std::get_if<Select>(&n.op))
    return std::min(of(s->a), of(s->b));
  if (auto *u = std::get_if<Unary>(&n.op))
    return u->op == UnOp::Neg ? of(u->a) : 0;
  auto *b = std::get_if<Binary>(&n.op);
  if (!b)
    return 0;
  int x = of(b->a), y = of(b->b);
  std::optional<int> k = powerOfTwo(*b->b);
  switch (b->op) {
  case BinOp::Add:
  case BinOp::Sub:
  case BinOp::BitOr:
  case BinOp::BitXor:
  case BinOp::Min:
  case BinOp::Max:
    return std::min(x, y);
  case BinOp::Mul:
    return std::min(kAll, x + y);
  case BinOp::BitAnd:
    return std::max(x, y);
  case BinOp::Shl:
    if (auto c = constantOf(*b->b); c && *c >= 0 && *c < 64)
      return std::min<int>(kAll, x + static_cast<int>(*c));
    return 0;
  case BinOp::Shr:
    if (auto c = constantOf(*b->b); c && *c >= 0 && *c < 64)
      return std::max(0, x - static_cast<int>(*c));
    return 0;
  case BinOp::Div:
  case BinOp::FloorDiv:
    // Division by 2^k: where x is a multiple of 2^k the quotient is exact (x >> k), otherwise
    // nothing is known.
    return k ? std::max(0, x - *k) : 0;
  case BinOp::Mod:
    // x - 2^k * q with q an integer: the low min(x, k) bits are x's.
    return k ? std::min(x, *k) : 0;
  default:
    return 0;
  }
}

} // namespace tilec::thir
