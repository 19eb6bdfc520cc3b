#include "analysis/SharedLayout.h"

#include <fmt/format.h>

namespace tilec::analysis {

int64_t SharedLayout::swizzle(int64_t o) const { return swizzleOf(o); }

int64_t SharedLayout::byteOffset(int64_t row, int64_t colByte) const {
  return offsetOf<int64_t>(row, colByte);
}

int64_t SharedLayout::elementOffset(int64_t flat) const {
  int64_t perRow = rowBytes / elementBytes;
  return byteOffset(flat / perRow, (flat % perRow) * elementBytes);
}

std::string SharedLayout::name() const {
  std::string s = panelled() ? fmt::format("panels_{}B_", panelBytes) : "";
  if (swizzleBytes == 0)
    return s + "row_major";
  return s + fmt::format("swizzled_{}B", swizzleBytes);
}

SharedLayout chooseSharedLayout(const std::vector<int64_t> &shape, int64_t elementBytes) {
  SharedLayout l;
  l.elementBytes = elementBytes;
  l.rowBytes = (shape.empty() ? 1 : shape.back()) * elementBytes;
  for (size_t d = 0; d + 1 < shape.size(); ++d)
    l.rows *= shape[d];
  l.panelBytes = l.rowBytes;
  if (shape.size() < 2 || l.rowBytes % 16 != 0)
    return l;
  if (l.rows % 8 == 0 && l.rowBytes % 128 == 0) {
    l.panelBytes = 128;
    l.swizzleBytes = 128;
  } else if (l.rows % 8 == 0 && (l.rowBytes == 32 || l.rowBytes == 64)) {
    l.swizzleBytes = static_cast<int>(l.rowBytes);
  } else if (l.rows % 8 == 0 && l.rowBytes % 64 == 0) {
    // Rows of an odd number of 64-byte lines (attention's K and V at head dimension 96): panels
    // of 64-byte swizzled lines, a canonical operand layout that TMA also writes.
    l.panelBytes = 64;
    l.swizzleBytes = 64;
  } else if (l.rows >= 8 && l.bytes() % 128 == 0) {
    // Not a canonical operand layout, but the XOR within 128-byte lines still spreads the rows
    // of an ldmatrix over the banks. Fewer than 8 rows no ldmatrix reads: those stay row-major,
    // which TMA writes without a swizzle from any 128-byte aligned version.
    l.swizzleBytes = 128;
  }
  return l;
}

std::optional<std::string> verifySharedLayout(const SharedLayout &l) {
  std::vector<int> seen(static_cast<size_t>(l.bytes()), 0);
  for (int64_t r = 0; r < l.rows; ++r)
    for (int64_t b = 0; b < l.rowBytes; ++b) {
      int64_t o = l.byteOffset(r, b);
      if (o < 0 || o >= l.bytes())
        return fmt::format("row {} byte {} maps to {}, outside the buffer", r, b, o);
      if (seen[static_cast<size_t>(o)]++)
        return fmt::format("row {} byte {} maps to {}, already taken", r, b, o);
      if (b % 16 != 0 && o != l.byteOffset(r, b - 1) + 1)
        return fmt::format("row {} byte {} does not follow byte {} (16-byte chunks must move "
                           "whole)",
                           r, b, b - 1);
    }
  return std::nullopt;
}

uint64_t WgmmaDescriptor::highBits() const {
  auto field = [](int64_t bytes) { return static_cast<uint64_t>((bytes & 0x3FFFF) >> 4); };
  return field(lbo) << 16 | field(sbo) << 32 | static_cast<uint64_t>(swizzleCode) << 62;
}

std::optional<WgmmaDescriptor> wgmmaDescriptor(const SharedLayout &l, bool kMajor, int64_t mnStart,
                                               int64_t kStart, int64_t mnExtent) {
  // 16-bit elements either way; float8 (1 byte) only K-major: the k-slice is 32 bytes of a line
  // for both, so the K-major geometry below does not depend on the element size.
  if (!l.wgmmaCanonical() || !(l.elementBytes == 2 || (l.elementBytes == 1 && kMajor)))
    return std::nullopt;
  WgmmaDescriptor d;
  d.swizzleCode = l.swizzleBytes == 128 ? 1 : l.swizzleBytes == 64 ? 2 : 3;
  int64_t eb = l.elementBytes, line = l.panelBytes, panel = l.rows * line;
  d.sbo = 8 * line; // the next 8-row atom of the panel
  if (kMajor) {
    // Rows are M/N; a k-slice (16 16-bit or 32 float8 elements) is 32 bytes of one line.
    int64_t kb = kStart * eb;
    if (mnStart % 8 != 0 || kb % 32 != 0 || mnStart + mnExtent > l.rows || kb + 32 > l.rowBytes)
      return std::nullopt;
    d.lbo = 16; // unused for swizzled K-major layouts
    d.startByte = (kb / line) * panel + mnStart * line + kb % line;
  } else {
    // Rows are K; the MN extent spans whole lines, one panel after another (LBO apart).
    int64_t mb = mnStart * eb;
    if (kStart % 8 != 0 || kStart + 16 > l.rows || mb % line != 0 || (mnExtent * eb) % line != 0 ||
        mb + mnExtent * eb > l.rowBytes)
      return std::nullopt;
    d.lbo = panel;
    d.startByte = (mb / line) * panel + kStart * line;
  }
  return d;
}

} // namespace tilec::analysis
