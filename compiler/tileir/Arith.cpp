#include "tileir/Arith.h"

#include "support/IntMath.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tilec::tile {

bool isImm(const Expr &e) {
  return std::holds_alternative<IntImm>(e->op) || std::holds_alternative<FloatImm>(e->op);
}

std::optional<double> asConstFloat(const Expr &e) {
  if (auto *i = std::get_if<IntImm>(&e->op))
    return static_cast<double>(i->value);
  if (auto *f = std::get_if<FloatImm>(&e->op))
    return f->value;
  return std::nullopt;
}

static bool fitsInt32(int64_t v) {
  return v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
}

static int rank(DType t) {
  // Wider wins; among floats of equal width (float16 vs bfloat16) neither does.
  return dtypeBits(t);
}

static DType promoteTyped(DType a, DType b) {
  if (a == b)
    return a;
  if (isFloat(a) && !isFloat(b))
    return a;
  if (isFloat(b) && !isFloat(a))
    return b;
  if (isFloat(a)) {
    if (rank(a) == rank(b))
      return DType::Float32;
    return rank(a) > rank(b) ? a : b;
  }
  if (a == DType::Bool)
    return b;
  if (b == DType::Bool)
    return a;
  if (rank(a) == rank(b))
    return isSigned(a) ? a : b;
  return rank(a) > rank(b) ? a : b;
}

DType promote(const Expr &a, const Expr &b) {
  bool ia = isImm(a), ib = isImm(b);
  if (ia && ib) {
    if (a->dtype == DType::Bool && b->dtype == DType::Bool)
      return DType::Bool;
    if (isFloat(a->dtype) || isFloat(b->dtype))
      return promoteTyped(isFloat(a->dtype) ? a->dtype : DType::Float32,
                          isFloat(b->dtype) ? b->dtype : DType::Float32);
    return (a->dtype == DType::Int64 || b->dtype == DType::Int64) ? DType::Int64 : DType::Int32;
  }
  if (ia || ib) {
    const Expr &imm = ia ? a : b;
    DType other = ia ? b->dtype : a->dtype;
    if (isFloat(imm->dtype) && !isFloat(other))
      return DType::Float32;
    if (other == DType::Bool && imm->dtype != DType::Bool)
      return DType::Int32;
    return other;
  }
  return promoteTyped(a->dtype, b->dtype);
}

namespace {

/// The integer range of a dtype narrower than 64 bits (nullopt for int64).
std::optional<std::pair<int64_t, int64_t>> narrowRange(DType t) {
  const int bits = dtypeBits(t);
  if (bits >= 64)
    return std::nullopt;
  if (isSigned(t))
    return std::make_pair(-(int64_t{1} << (bits - 1)), (int64_t{1} << (bits - 1)) - 1);
  return std::make_pair(int64_t{0}, (int64_t{1} << bits) - 1);
}

/// `v` converted to the integer dtype `t` as a run-time conversion does: the low bits, read
/// as signed or unsigned by `t`.
int64_t wrapTo(int64_t v, DType t) {
  const int bits = dtypeBits(t);
  if (bits >= 64)
    return v;
  uint64_t low = static_cast<uint64_t>(v) & ((uint64_t{1} << bits) - 1);
  if (isSigned(t) && (low >> (bits - 1)) != 0)
    return static_cast<int64_t>(low) - (int64_t{1} << bits);
  return static_cast<int64_t>(low);
}

} // namespace

Expr makeCast(Expr a, DType t, SourceLoc loc) {
  if (a->dtype == t)
    return a;
  if (!loc.valid())
    loc = a->loc;
  // Constants convert as run-time values do (codegen's casts): integers wrap to the
  // target's width, floats truncate toward zero and saturate (NaN gives 0).
  if (auto *i = std::get_if<IntImm>(&a->op)) {
    if (isFloat(t))
      return floatImm(static_cast<double>(i->value), t, loc);
    if (t == DType::Bool)
      return intImm(i->value != 0, t, loc);
    return intImm(isInteger(a->dtype) ? wrapTo(i->value, t) : i->value, t, loc);
  }
  if (auto *f = std::get_if<FloatImm>(&a->op)) {
    if (isFloat(t))
      return floatImm(f->value, t, loc);
    if (t == DType::Bool)
      return intImm(f->value != 0.0, t, loc);
    if (std::isnan(f->value))
      return intImm(0, t, loc);
    double v = std::trunc(f->value);
    if (auto range = narrowRange(t))
      return intImm(static_cast<int64_t>(std::clamp(v, static_cast<double>(range->first),
                                                    static_cast<double>(range->second))),
                    t, loc);
    if (std::fabs(v) < 9.2e18)
      return intImm(static_cast<int64_t>(v), t, loc);
  }
  return std::make_shared<Node>(Node{t, loc, Cast{std::move(a)}});
}

static bool isComparison(BinOp op) { return op >= BinOp::Eq && op <= BinOp::Ge; }

static std::optional<int64_t> foldInt(BinOp op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
  case BinOp::Add:
    if (__builtin_add_overflow(a, b, &r))
      return std::nullopt;
    return r;
  case BinOp::Sub:
    if (__builtin_sub_overflow(a, b, &r))
      return std::nullopt;
    return r;
  case BinOp::Mul:
    if (__builtin_mul_overflow(a, b, &r))
      return std::nullopt;
    return r;
  case BinOp::FloorDiv:
  case BinOp::Div:
    if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1))
      return std::nullopt;
    return op == BinOp::Div ? a / b : floorDiv(a, b);
  case BinOp::Mod:
    if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1))
      return std::nullopt;
    return floorMod(a, b);
  case BinOp::Pow: {
    if (b < 0)
      return std::nullopt;
    int64_t acc = 1;
    for (int64_t i = 0; i < b; ++i) {
      if (__builtin_mul_overflow(acc, a, &acc))
        return std::nullopt;
      if (acc == 0 || acc == 1)
        break;
    }
    return acc;
  }
  case BinOp::Min:
    return std::min(a, b);
  case BinOp::Max:
    return std::max(a, b);
  case BinOp::Eq:
    return a == b;
  case BinOp::Ne:
    return a != b;
  case BinOp::Lt:
    return a < b;
  case BinOp::Le:
    return a <= b;
  case BinOp::Gt:
    return a > b;
  case BinOp::Ge:
    return a >= b;
  case BinOp::And:
    return a && b;
  case BinOp::Or:
    return a || b;
  case BinOp::BitAnd:
    return a & b;
  case BinOp::BitOr:
    return a | b;
  case BinOp::BitXor:
    return a ^ b;
  case BinOp::Shl: {
    if (b < 0 || b > 63)
      return std::nullopt;
    // Shifting a negative value left is fine in two's complement; the bits shifted out must
    // equal the sign, or it overflowed.
    auto u = static_cast<uint64_t>(a) << b;
    r = static_cast<int64_t>(u);
    if ((r >> b) != a)
      return std::nullopt;
    return r;
  }
  case BinOp::Shr:
    if (b < 0 || b > 63)
      return std::nullopt;
    return a >> b;
  }
  return std::nullopt;
}

static std::optional<double> foldFloat(BinOp op, double a, double b) {
  switch (op) {
  case BinOp::Add:
    return a + b;
  case BinOp::Sub:
    return a - b;
  case BinOp::Mul:
    return a * b;
  case BinOp::Div:
    return b == 0.0 ? std::optional<double>() : a / b;
  case BinOp::FloorDiv:
    return b == 0.0 ? std::optional<double>() : std::floor(a / b);
  case BinOp::Mod:
    return b == 0.0 ? std::optional<double>() : a - std::floor(a / b) * b;
  case BinOp::Pow:
    return std::pow(a, b);
  case BinOp::Min:
    return std::min(a, b);
  case BinOp::Max:
    return std::max(a, b);
  case BinOp::Eq:
    return a == b;
  case BinOp::Ne:
    return a != b;
  case BinOp::Lt:
    return a < b;
  case BinOp::Le:
    return a <= b;
  case BinOp::Gt:
    return a > b;
  case BinOp::Ge:
    return a >= b;
  case BinOp::And:
    return (a != 0) && (b != 0);
  case BinOp::Or:
    return (a != 0) || (b != 0);
  case BinOp::BitAnd:
  case BinOp::BitOr:
  case BinOp::BitXor:
  case BinOp::Shl:
  case BinOp::Shr:
    return std::nullopt; // integers only (sema refuses them on floats)
  }
  return std::nullopt;
}

Expr makeBinary(BinOp op, Expr a, Expr b, SourceLoc loc) {
  if (!loc.valid())
    loc = a->loc;
  bool logic = op == BinOp::And || op == BinOp::Or;
  DType t = logic ? DType::Bool : promote(a, b);
  a = makeCast(std::move(a), t);
  b = makeCast(std::move(b), t);
  DType result = (isComparison(op) || logic) ? DType::Bool : t;
  if (isImm(a) && isImm(b)) {
    if (!isFloat(t)) {
      auto ia = std::get<IntImm>(a->op).value, ib = std::get<IntImm>(b->op).value;
      if (auto r = foldInt(op, ia, ib)) {
        if (result == DType::Int32 && !fitsInt32(*r))
          result = DType::Int64;
        return intImm(*r, result, loc);
      }
    } else {
      double fa = *asConstFloat(a), fb = *asConstFloat(b);
      if (auto r = foldFloat(op, fa, fb))
        return result == DType::Bool ? intImm(*r != 0.0, DType::Bool, loc)
                                     : floatImm(*r, result, loc);
    }
  }
  // Identities that keep index arithmetic readable; only exact ones.
  if (!isFloat(t)) {
    auto ca = asConstInt(a), cb = asConstInt(b);
    if (op == BinOp::Add && cb == 0)
      return a;
    if (op == BinOp::Add && ca == 0)
      return b;
    if (op == BinOp::Sub && cb == 0)
      return a;
    if (op == BinOp::Mul && cb == 1)
      return a;
    if (op == BinOp::Mul && ca == 1)
      return b;
    if ((op == BinOp::FloorDiv || op == BinOp::Div) && cb == 1)
      return a;
  }
  if (logic) {
    if (auto ca = asConstInt(a))
      return op == BinOp::And ? (*ca ? b : a) : (*ca ? a : b);
  }
  return std::make_shared<Node>(Node{result, loc, Binary{op, std::move(a), std::move(b)}});
}

Expr makeUnary(UnOp op, Expr a, SourceLoc loc) {
  if (!loc.valid())
    loc = a->loc;
  if (op == UnOp::Not) {
    a = makeCast(std::move(a), DType::Bool);
    if (auto c = asConstInt(a))
      return intImm(!*c, DType::Bool, loc);
    return std::make_shared<Node>(Node{DType::Bool, loc, Unary{op, std::move(a)}});
  }
  if (op == UnOp::BitNot) {
    if (auto c = asConstInt(a)) {
      int64_t v = ~*c;
      if (!isSigned(a->dtype) && dtypeBits(a->dtype) < 64)
        v &= (int64_t{1} << dtypeBits(a->dtype)) - 1;
      return intImm(v, a->dtype, loc);
    }
    DType t = a->dtype;
    return std::make_shared<Node>(Node{t, loc, Unary{op, std::move(a)}});
  }
  bool mathOp = op != UnOp::Neg && op != UnOp::Abs;
  if (mathOp && !isFloat(a->dtype))
    a = makeCast(std::move(a), DType::Float32);
  if (auto c = asConstInt(a); c && (op == UnOp::Neg || op == UnOp::Abs)) {
    if (*c != std::numeric_limits<int64_t>::min())
      return intImm(op == UnOp::Neg ? -*c : std::llabs(*c), a->dtype, loc);
  }
  if (auto *f = std::get_if<FloatImm>(&a->op)) {
    double v = f->value;
    std::optional<double> r;
    switch (op) {
    case UnOp::Neg:
      r = -v;
      break;
    case UnOp::Abs:
      r = std::fabs(v);
      break;
    case UnOp::Exp:
      r = std::exp(v);
      break;
    case UnOp::Exp2:
      r = std::exp2(v);
      break;
    case UnOp::Log:
      r = std::log(v);
      break;
    case UnOp::Log2:
      r = std::log2(v);
      break;
    case UnOp::Sqrt:
      r = std::sqrt(v);
      break;
    case UnOp::Rsqrt:
      r = 1.0 / std::sqrt(v);
      break;
    case UnOp::Tanh:
      r = std::tanh(v);
      break;
    case UnOp::Erf:
      r = std::erf(v);
      break;
    case UnOp::Sigmoid:
      r = 1.0 / (1.0 + std::exp(-v));
      break;
    case UnOp::Floor:
      r = std::floor(v);
      break;
    case UnOp::Ceil:
      r = std::ceil(v);
      break;
    case UnOp::Not:
    case UnOp::BitNot:
      break;
    }
    if (r)
      return floatImm(*r, a->dtype, loc);
  }
  DType t = a->dtype;
  return std::make_shared<Node>(Node{t, loc, Unary{op, std::move(a)}});
}

Expr makeSelect(Expr cond, Expr a, Expr b, SourceLoc loc) {
  if (!loc.valid())
    loc = cond->loc;
  cond = makeCast(std::move(cond), DType::Bool);
  DType t = promote(a, b);
  a = makeCast(std::move(a), t);
  b = makeCast(std::move(b), t);
  if (auto c = asConstInt(cond))
    return *c ? a : b;
  return std::make_shared<Node>(Node{t, loc, Select{std::move(cond), std::move(a), std::move(b)}});
}

Expr makeLoad(BufferPtr buf, std::vector<Expr> indices, SourceLoc loc) {
  DType t = buf->dtype;
  return std::make_shared<Node>(Node{t, loc, Load{std::move(buf), std::move(indices)}});
}

// ---- Affine forms ----------------------------------------------------------------------------

static bool addTerms(AffineForm &into, const AffineForm &f, int64_t scale) {
  int64_t c = 0;
  if (__builtin_mul_overflow(f.constant, scale, &c) ||
      __builtin_add_overflow(into.constant, c, &into.constant))
    return false;
  for (const auto &[key, term] : f.terms) {
    int64_t k = 0;
    if (__builtin_mul_overflow(term.first, scale, &k))
      return false;
    auto [it, inserted] = into.terms.try_emplace(key, 0, term.second);
    if (__builtin_add_overflow(it->second.first, k, &it->second.first))
      return false;
    if (it->second.first == 0)
      into.terms.erase(it);
  }
  return true;
}

std::optional<AffineForm> toAffine(const Expr &e) {
  if (isFloat(e->dtype) || e->dtype == DType::Bool)
    return std::nullopt;
  AffineForm f;
  if (auto c = asConstInt(e)) {
    f.constant = *c;
    return f;
  }
  if (auto *b = std::get_if<Binary>(&e->op)) {
    if (b->op == BinOp::Add || b->op == BinOp::Sub) {
      auto l = toAffine(b->a), r = toAffine(b->b);
      if (l && r && addTerms(f, *l, 1) && addTerms(f, *r, b->op == BinOp::Add ? 1 : -1))
        return f;
      return std::nullopt;
    }
    if (b->op == BinOp::Mul) {
      auto ca = asConstInt(b->a), cb = asConstInt(b->b);
      if (ca || cb) {
        auto other = toAffine(ca ? b->b : b->a);
        if (other && addTerms(f, *other, ca ? *ca : *cb))
          return f;
        return std::nullopt;
      }
    }
  }
  if (auto *c = std::get_if<Cast>(&e->op); c && !c->reinterpret && !isFloat(c->a->dtype) &&
                                           dtypeBits(e->dtype) >= dtypeBits(c->a->dtype))
    return toAffine(c->a);
  f.terms.emplace(print(e), std::make_pair(int64_t{1}, e));
  return f;
}

std::optional<int64_t> constDifference(const Expr &hi, const Expr &lo) {
  auto h = toAffine(hi), l = toAffine(lo);
  if (!h || !l)
    return std::nullopt;
  AffineForm d;
  if (!addTerms(d, *h, 1) || !addTerms(d, *l, -1) || !d.terms.empty())
    return std::nullopt;
  return d.constant;
}

bool isMultipleOf(const Expr &e, int64_t m) {
  if (m <= 1)
    return true;
  auto f = toAffine(e);
  if (!f || f->constant % m != 0)
    return false;
  for (const auto &[key, term] : f->terms)
    if (term.first % m != 0)
      return false;
  return true;
}

} // namespace tilec::tile
