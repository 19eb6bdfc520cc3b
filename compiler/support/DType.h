// Element types of the language, shared by every stage.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tilec {

enum class DType {
  Bool,
  Int8,
  UInt8,
  Int16,
  Int32,
  UInt32,
  Int64,
  Float8E4M3,
  Float8E5M2,
  Float16,
  BFloat16,
  Float32,
  Float64,
};

/// Parses a dtype name, long (`float16`), short (`f16`) or as a TileLang string (`"float16"`).
std::optional<DType> parseDType(std::string_view name);
/// A dtype written as a string: parseDType's names, and the spellings TileLang (TVM) and PyTorch
/// programs use ("float" and "float32", "half", "double", "int", "uint", "float8_e4m3fn", ...).
std::optional<DType> parseDTypeString(std::string_view name);
/// The canonical long name (`float16`).
std::string_view dtypeName(DType t);
/// The C++ type a host header uses for a scalar parameter of this dtype (`float`, `int32_t`).
std::string_view dtypeCxxName(DType t);
int dtypeBits(DType t);
inline int dtypeBytes(DType t) { return (dtypeBits(t) + 7) / 8; }
bool isFloat(DType t);
bool isInteger(DType t); // Bool excluded
bool isSigned(DType t);
inline bool isFloat8(DType t) { return t == DType::Float8E4M3 || t == DType::Float8E5M2; }

/// The value of the float8 (`float8_e4m3` or `float8_e5m2`) encoding `bits`. e4m3 has no
/// infinities and one NaN per sign (S.1111.111); e5m2 follows IEEE (S.11111.00 is infinity).
double float8Value(uint8_t bits, DType t);
/// `v` rounded to the float8 type `t` as PTX's `cvt.rn.satfinite` does: to nearest, ties to
/// even, magnitudes beyond the largest finite value (and infinities) to that value, NaN to NaN.
uint8_t float8Bits(double v, DType t);

} // namespace tilec
