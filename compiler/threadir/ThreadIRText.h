// Lexical pieces of the thread IR text form that the printer writes and the parser reads.
#pragma once

#include <limits>
#include <string>
#include <string_view>

namespace tilec::thir::text {

/// The NaN that `nan` stands for; other NaNs are written with their bits, `nan(0x...)`.
inline constexpr double kCanonicalNaN = std::numeric_limits<double>::quiet_NaN();

/// Shortest decimal that reads back as `v`, always with a '.' or exponent (`1.0`, `1e-05`),
/// `inf`, `-inf`, `nan` or `nan(0x7ff0000000000001)`.
std::string floatLiteral(double v);
/// A double-quoted string with `\"`, `\\`, `\n`, `\t` and `\xHH` for other control bytes and
/// bytes >= 0x7f.
std::string quoted(std::string_view s);
/// Whether `s` is a C identifier ([A-Za-z_][A-Za-z0-9_]*): kernel and parameter names must be.
bool isIdentifier(std::string_view s);
/// `s` itself when it is an identifier, otherwise quoted(s).
std::string name(std::string_view s);

} // namespace tilec::thir::text
