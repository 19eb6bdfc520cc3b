#include "support/DType.h"

#include <array>
#include <cmath>
#include <limits>
#include <utility>

namespace tilec {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  std::string_view shortName;
  std::string_view cxx;
  int bits;
};
constexpr std::array<DTypeInfo, 13> kInfo = {{
    {DType::Bool, "bool", "", "bool", 8},
    {DType::Int8, "int8", "i8", "int8_t", 8},
    {DType::UInt8, "uint8", "u8", "uint8_t", 8},
    {DType::Int16, "int16", "i16", "int16_t", 16},
    {DType::Int32, "int32", "i32", "int32_t", 32},
    {DType::UInt32, "uint32", "u32", "uint32_t", 32},
    {DType::Int64, "int64", "i64", "int64_t", 64},
    {DType::Float8E4M3, "float8_e4m3", "", "uint8_t", 8},
    {DType::Float8E5M2, "float8_e5m2", "", "uint8_t", 8},
    {DType::Float16, "float16", "f16", "uint16_t", 16},
    {DType::BFloat16, "bfloat16", "bf16", "uint16_t", 16},
    {DType::Float32, "float32", "f32", "float", 32},
    {DType::Float64, "float64", "f64", "double", 64},
}};
const DTypeInfo &info(DType t) { return kInfo[static_cast<size_t>(t)]; }
} // namespace

std::optional<DType> parseDType(std::string_view name) {
  if (name.size() >= 2 && (name.front() == '"' || name.front() == '\'') &&
      name.back() == name.front())
    name = name.substr(1, name.size() - 2);
  for (const DTypeInfo &i : kInfo)
    if (name == i.name || (!i.shortName.empty() && name == i.shortName))
      return i.type;
  return std::nullopt;
}

std::optional<DType> parseDTypeString(std::string_view name) {
  if (auto t = parseDType(name))
    return t;
  static constexpr std::array<std::pair<std::string_view, DType>, 9> kAliases = {{
      {"float", DType::Float32},
      {"double", DType::Float64},
      {"half", DType::Float16},
      {"int", DType::Int32},
      {"uint", DType::UInt32},
      {"float8_e4m3fn", DType::Float8E4M3},
      {"e4m3_float8", DType::Float8E4M3},
      {"float8_e5m2fn", DType::Float8E5M2},
      {"e5m2_float8", DType::Float8E5M2},
  }};
  for (const auto &[alias, t] : kAliases)
    if (name == alias)
      return t;
  return std::nullopt;
}

std::string_view dtypeName(DType t) { return info(t).name; }
std::string_view dtypeCxxName(DType t) { return info(t).cxx; }
int dtypeBits(DType t) { return info(t).bits; }

bool isFloat(DType t) {
  switch (t) {
  case DType::Float8E4M3:
  case DType::Float8E5M2:
  case DType::Float16:
  case DType::BFloat16:
  case DType::Float32:
  case DType::Float64:
    return true;
  default:
    return false;
  }
}
bool isInteger(DType t) { return !isFloat(t) && t != DType::Bool; }
bool isSigned(DType t) {
  return t == DType::Int8 || t == DType::Int16 || t == DType::Int32 || t == DType::Int64;
}

double float8Value(uint8_t bits, DType t) {
  bool e4m3 = t == DType::Float8E4M3;
  int mantBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  int exp = (bits & 0x7F) >> mantBits, mant = bits & ((1 << mantBits) - 1);
  double sign = (bits & 0x80) ? -1.0 : 1.0;
  if (e4m3 && (bits & 0x7F) == 0x7F)
    return std::numeric_limits<double>::quiet_NaN();
  if (!e4m3 && exp == 31)
    return mant == 0 ? sign * std::numeric_limits<double>::infinity()
                     : std::numeric_limits<double>::quiet_NaN();
  if (exp == 0) // subnormal
    return sign * std::ldexp(mant, 1 - bias - mantBits);
  return sign * std::ldexp((1 << mantBits) + mant, exp - bias - mantBits);
}

uint8_t float8Bits(double v, DType t) {
  bool e4m3 = t == DType::Float8E4M3;
  if (std::isnan(v))
    return 0x7F;
  uint8_t sign = std::signbit(v) ? 0x80 : 0;
  double mag = std::fabs(v);
  // The finite non-negative encodings are 0 .. maxFinite in increasing order of value: the
  // nearest of two neighbours, ties to the even encoding.
  uint8_t maxFinite = e4m3 ? 0x7E : 0x7B;
  if (mag >= float8Value(maxFinite, t))
    return sign | maxFinite;
  uint8_t lo = 0;
  while (float8Value(static_cast<uint8_t>(lo + 1), t) <= mag)
    ++lo;
  double below = float8Value(lo, t), above = float8Value(static_cast<uint8_t>(lo + 1), t);
  uint8_t pick = mag - below < above - mag   ? lo
                 : mag - below > above - mag ? static_cast<uint8_t>(lo + 1)
                 : (lo % 2 == 0)             ? lo
                                             : static_cast<uint8_t>(lo + 1);
  return sign | pick;
}

} // namespace tilec
