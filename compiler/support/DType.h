// Element types of the language, shared by every stage.
#pragma once

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
/// The canonical long name (`float16`).
std::string_view dtypeName(DType t);
/// The C++ type a host header uses for a scalar parameter of this dtype (`float`, `int32_t`).
std::string_view dtypeCxxName(DType t);
int dtypeBits(DType t);
inline int dtypeBytes(DType t) { return (dtypeBits(t) + 7) / 8; }
bool isFloat(DType t);
bool isInteger(DType t); // Bool excluded
bool isSigned(DType t);

} // namespace tilec
