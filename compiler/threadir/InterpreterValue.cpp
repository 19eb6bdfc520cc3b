#include "threadir/InterpreterValue.h"

#include "support/IntMath.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace tilec::thir::interp {

namespace {

int64_t nonZeroDivisor(int64_t b) {
  if (b == 0)
    throw Stop("integer division by zero");
  return b;
}

/// The value of 8-bit float code `b` (sign, exponent, mantissa): e4m3 (bias 7, no infinities,
/// S.1111.111 NaN) or e5m2 (bias 15, IEEE infinities and NaNs).
double decodeFloat8(uint32_t b, DType t) {
  const bool e4m3 = t == DType::Float8E4M3;
  const int manBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15, expMax = e4m3 ? 15 : 31;
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  const int e = static_cast<int>((b & 0x7F) >> manBits),
            man = static_cast<int>(b & ((1u << manBits) - 1));
  if (e4m3 && e == expMax && man == (1 << manBits) - 1)
    return std::nan("");
  if (!e4m3 && e == expMax)
    return man ? std::nan("") : sign * INFINITY;
  if (e == 0)
    return sign * std::ldexp(man, 1 - bias - manBits);
  return sign * std::ldexp((1 << manBits) + man, e - bias - manBits);
}

/// The 8-bit code nearest `v`, ties to the even code, saturating to the largest finite value
/// (PTX's cvt.rn.satfinite); NaN gives the NaN code.
uint64_t encodeFloat8(double v, DType t) {
  const bool e4m3 = t == DType::Float8E4M3;
  if (std::isnan(v))
    return 0x7F;
  const uint32_t maxCode = e4m3 ? 0x7E : 0x7B; // 448 and 57344
  const uint32_t sign = std::signbit(v) ? 0x80 : 0;
  const double a = std::fabs(v);
  // Positive codes increase with their values: bisect for the first not below a.
  uint32_t lo = 0, hi = maxCode;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (decodeFloat8(mid, t) < a)
      lo = mid + 1;
    else
      hi = mid;
  }
  uint32_t code = lo;
  if (code > 0 && decodeFloat8(code, t) >= a) {
    double below = a - decodeFloat8(code - 1, t), above = decodeFloat8(code, t) - a;
    if (below < above || (below == above && (code - 1) % 2 == 0))
      code -= 1;
  }
  return sign | code;
}

} // namespace

bool floating(DType t) {
  return t == DType::Float8E4M3 || t == DType::Float8E5M2 || t == DType::Float16 ||
         t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
int widthBits(DType t) { return t == DType::Bool ? 8 : dtypeBits(t); }

double toDouble(uint64_t b, DType t) {
  switch (t) {
  case DType::Float8E4M3:
  case DType::Float8E5M2:
    return decodeFloat8(static_cast<uint32_t>(b & 0xFF), t);
  case DType::Float64: {
    double d;
    std::memcpy(&d, &b, 8);
    return d;
  }
  case DType::Float32: {
    auto u = static_cast<uint32_t>(b);
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  case DType::Float16: {
    auto u = static_cast<uint16_t>(b);
    _Float16 h;
    std::memcpy(&h, &u, 2);
    return static_cast<double>(h);
  }
  case DType::BFloat16: {
    auto u = static_cast<uint32_t>(b & 0xFFFF) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  default:
    throw Stop(fmt::format("{} is not a floating-point type", dtypeName(t)));
  }
}

uint64_t fromDouble(double v, DType t) {
  switch (t) {
  case DType::Float8E4M3:
  case DType::Float8E5M2:
    return encodeFloat8(v, t);
  case DType::Float64: {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return b;
  }
  case DType::Float32: {
    auto f = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
  }
  case DType::Float16: {
    auto h = static_cast<_Float16>(v);
    uint16_t u;
    std::memcpy(&u, &h, 2);
    return u;
  }
  case DType::BFloat16: {
    auto f = static_cast<float>(v);
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (std::isnan(f))
      return 0x7FC0;
    return (u + 0x7FFF + ((u >> 16) & 1)) >> 16; // to nearest, ties to even
  }
  default:
    throw Stop(fmt::format("{} is not a floating-point type", dtypeName(t)));
  }
}

int64_t toInt(uint64_t b, DType t) {
  if (t == DType::Bool)
    return b != 0;
  int w = widthBits(t);
  if (w == 64)
    return static_cast<int64_t>(b);
  uint64_t m = (uint64_t{1} << w) - 1;
  b &= m;
  if (isSigned(t) && (b >> (w - 1)) & 1)
    return static_cast<int64_t>(b | ~m);
  return static_cast<int64_t>(b);
}

uint64_t fromInt(int64_t v, DType t) {
  if (t == DType::Bool)
    return v != 0;
  int w = widthBits(t);
  auto u = static_cast<uint64_t>(v);
  return w == 64 ? u : u & ((uint64_t{1} << w) - 1);
}

Val splat(Type t, uint64_t bits) {
  Val v(t);
  for (int i = 0; i < t.lanes; ++i)
    v.bits[i] = bits;
  return v;
}

uint64_t castBits(uint64_t b, DType from, DType to) {
  if (floating(from) && floating(to))
    return fromDouble(toDouble(b, from), to);
  if (floating(from)) {
    double d = toDouble(b, from);
    if (to == DType::Bool)
      return d != 0;
    // Out of range saturates, NaN gives 0 (PTX's cvt.rzi; the C++ cast would be undefined).
    int64_t i = std::isnan(d)  ? 0
                : d >= 0x1p63  ? INT64_MAX
                : d <= -0x1p63 ? INT64_MIN
                               : static_cast<int64_t>(std::trunc(d));
    return fromInt(i, to);
  }
  if (floating(to))
    return fromDouble(static_cast<double>(toInt(b, from)), to);
  return fromInt(toInt(b, from), to);
}

int64_t scalarInt(const Val &v) { return toInt(v.bits[0], v.type.elem); }

uint64_t unary(UnOp op, uint64_t b, DType t) {
  if (!floating(t)) {
    int64_t x = toInt(b, t);
    int64_t r = op == UnOp::Neg      ? -x
                : op == UnOp::Not    ? !x
                : op == UnOp::BitNot ? ~x
                : op == UnOp::Abs    ? (x < 0 ? -x : x)
                                     : throw Stop("an integer unary operation");
    return fromInt(r, t);
  }
  double x = toDouble(b, t), r = 0;
  switch (op) {
  case UnOp::Neg:
    r = -x;
    break;
  case UnOp::Abs:
    r = std::fabs(x);
    break;
  case UnOp::Exp:
    r = std::exp(x);
    break;
  case UnOp::Exp2:
    r = std::exp2(x);
    break;
  case UnOp::Log:
    r = std::log(x);
    break;
  case UnOp::Log2:
    r = std::log2(x);
    break;
  case UnOp::Sqrt:
    r = std::sqrt(x);
    break;
  case UnOp::Rsqrt:
    r = 1.0 / std::sqrt(x);
    break;
  case UnOp::Tanh:
    r = std::tanh(x);
    break;
  case UnOp::Erf:
    r = std::erf(x);
    break;
  case UnOp::Sigmoid:
    r = 1.0 / (1.0 + std::exp(-x));
    break;
  case UnOp::Floor:
    r = std::floor(x);
    break;
  case UnOp::Ceil:
    r = std::ceil(x);
    break;
  default:
    throw Stop("a floating-point unary operation");
  }
  return fromDouble(r, t);
}

uint64_t binary(BinOp op, uint64_t a, uint64_t b, DType t, DType result) {
  if (floating(t)) {
    double x = toDouble(a, t), y = toDouble(b, t);
    switch (op) {
    case BinOp::Add:
      return fromDouble(x + y, result);
    case BinOp::Sub:
      return fromDouble(x - y, result);
    case BinOp::Mul:
      return fromDouble(x * y, result);
    case BinOp::Div:
      return fromDouble(x / y, result);
    case BinOp::Pow:
      return fromDouble(std::pow(x, y), result);
    case BinOp::Min:
      return fromDouble(std::fmin(x, y), result);
    case BinOp::Max:
      return fromDouble(std::fmax(x, y), result);
    case BinOp::FloorDiv:
      return fromDouble(std::floor(x / y), result);
    case BinOp::Mod:
      return fromDouble(x - y * std::floor(x / y), result);
    case BinOp::Eq:
      return x == y;
    case BinOp::Ne:
      return x != y;
    case BinOp::Lt:
      return x < y;
    case BinOp::Le:
      return x <= y;
    case BinOp::Gt:
      return x > y;
    case BinOp::Ge:
      return x >= y;
    default:
      throw Stop("a floating-point binary operation");
    }
  }
  int64_t x = toInt(a, t), y = toInt(b, t);
  bool u = !isSigned(t) && t != DType::Bool;
  auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  int64_t r = 0;
  switch (op) {
  case BinOp::Add:
    r = x + y;
    break;
  case BinOp::Sub:
    r = x - y;
    break;
  case BinOp::Mul:
    r = x * y;
    break;
  case BinOp::Div:
    if (y == 0)
      throw Stop("integer division by zero");
    r = u ? static_cast<int64_t>(ux / uy) : x / y;
    break;
  case BinOp::FloorDiv:
    r = floorDiv(x, nonZeroDivisor(y));
    break;
  case BinOp::Mod:
    r = floorMod(x, nonZeroDivisor(y));
    break;
  case BinOp::Min:
    r = u ? static_cast<int64_t>(std::min(ux, uy)) : std::min(x, y);
    break;
  case BinOp::Max:
    r = u ? static_cast<int64_t>(std::max(ux, uy)) : std::max(x, y);
    break;
  case BinOp::Eq:
    return x == y;
  case BinOp::Ne:
    return x != y;
  case BinOp::Lt:
    return u ? ux < uy : x < y;
  case BinOp::Le:
    return u ? ux <= uy : x <= y;
  case BinOp::Gt:
    return u ? ux > uy : x > y;
  case BinOp::Ge:
    return u ? ux >= uy : x >= y;
  case BinOp::And:
    return x && y;
  case BinOp::Or:
    return x || y;
  case BinOp::BitAnd:
    r = x & y;
    break;
  case BinOp::BitOr:
    r = x | y;
    break;
  case BinOp::BitXor:
    r = x ^ y;
    break;
  case BinOp::Shl:
    r = static_cast<int64_t>(ux << (y & 63));
    break;
  case BinOp::Shr:
    r = u || !isSigned(t) ? static_cast<int64_t>(fromInt(x, t) >> (y & 63)) : x >> (y & 63);
    break;
  default:
    throw Stop("an integer binary operation");
  }
  return fromInt(r, result);
}

void readLanes(Val &v, const uint8_t *p) {
  int b = widthBits(v.type.elem) / 8;
  for (int i = 0; i < v.type.lanes; ++i) {
    uint64_t x = 0;
    std::memcpy(&x, p + i * b, static_cast<size_t>(b));
    v.bits[i] = x;
  }
}

void writeLanes(const Val &v, uint8_t *p) {
  int b = widthBits(v.type.elem) / 8;
  for (int i = 0; i < v.type.lanes; ++i) {
    const uint64_t x = v.bits[i];
    std::memcpy(p + i * b, &x, static_cast<size_t>(b));
  }
}

} // namespace tilec::thir::interp
