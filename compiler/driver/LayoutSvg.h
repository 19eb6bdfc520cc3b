// Layout pictures (`--emit layout-svg`): an SVG drawn from the full layout report, showing for
// each fragment which thread and register slot hold each element, and for each shared buffer
// where each element lands in its 128-byte line after the swizzle.
#pragma once

#include <string>
#include <string_view>

namespace tilec::driver {

/// The SVG text for a layout report produced with full detail (LayoutReportOptions::full).
/// Large buffers are drawn in part (the first kMaxCells rows and columns), which the picture
/// says. Throws std::logic_error (a compiler bug) when the report lacks the full detail.
std::string layoutSvg(std::string_view fullReportJson);

inline constexpr int kMaxCells = 64;

} // namespace tilec::driver
