// Shared-memory tile layouts: where each element of a shared buffer lives, in bytes.
//
// A buffer of shape (d0, ..., dn) is a matrix of rows = d0 * ... * d(n-1) rows of
// rowBytes = dn * elementBytes. The row is cut into panels of `panelBytes` (a panel is a dense
// rows x panelBytes block; panel p starts at p * rows * panelBytes); then 16-byte chunks are
// XOR-swizzled within each 128-byte line of the buffer's 1024-aligned byte range:
//
//   offset(r, b) = swizzle(p * rows * panelBytes + r * panelBytes + b % panelBytes),  p = b /
//   panelBytes swizzle_W(o) = o ^ (((o >> 7) & (W / 16 - 1)) << 4)                        (W = 32,
//   64, 128)
//
// With panelBytes == W and rows % 8 == 0 this is exactly the canonical K-major / MN-major
// layout of wgmma shared operands and what TMA writes with SWIZZLE_W (cookbook sections 3.5, 7):
// 8 rows of one line form a W*8-byte atom. The same swizzle makes the 8 rows that one ldmatrix or
// a column of 16-byte accesses touches fall on 8 different bank groups.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace tilec::analysis {

struct SharedLayout {
  int64_t rows = 1;
  int64_t rowBytes = 0;
  int64_t elementBytes = 1;
  int64_t panelBytes = 0; // == rowBytes: plain row-major rows
  int swizzleBytes = 0;   // 0 (none), 32, 64 or 128

  int64_t bytes() const { return rows * rowBytes; }
  /// The placement formula, written once over any integer-like `I` (integers here, thread-IR
  /// expressions in lowering, lower/IndexExpr.h): the byte offset of byte `colByte` of row `row`
  /// (none: a buffer of one row), and the swizzle of an offset from the buffer's start.
  template <class I> I offsetOf(std::optional<I> row, I colByte) const {
    I bytes = !panelled() ? (row ? *row * rowBytes + colByte : colByte)
                          : colByte / panelBytes * (rows * panelBytes) + *row * panelBytes +
                                colByte % panelBytes;
    return swizzleOf(bytes);
  }
  template <class I> I swizzleOf(I offset) const {
    if (swizzleBytes == 0)
      return offset;
    // Byte bits 4.. ^= bits 7..: the swizzle of TMA and wgmma.
    I chunkXor = (offset >> 7 & (swizzleBytes / 16 - 1)) << 4;
    if constexpr (std::is_integral_v<I>)
      return offset ^ chunkXor;
    else
      // The same value, written so that offsets that differ by a constant within a 16-byte
      // chunk stay a constant apart after the XOR: LLVM's load/store vectorizer then sees
      // adjacent accesses (a thread's run of 2-byte stores into one chunk becomes one vector).
      return ((offset & ~int64_t{15}) ^ chunkXor) + (offset & 15);
  }
  bool panelled() const { return panelBytes != rowBytes; }
  /// Byte offset of byte `colByte` of row `row` from the start of the buffer.
  int64_t byteOffset(int64_t row, int64_t colByte) const;
  /// Byte offset of the element with row-major flat index `flat`.
  int64_t elementOffset(int64_t flat) const;
  /// The layout-report name: "row_major", "swizzled_128B", "panels_128B_swizzled_128B", ...
  std::string name() const;
  /// Whether this is a canonical wgmma operand layout (swizzled lines of panelBytes, atoms of
  /// 8 rows): the descriptor's swizzle mode and strides follow from it.
  bool wgmmaCanonical() const {
    return swizzleBytes != 0 && panelBytes == swizzleBytes && rows % 8 == 0;
  }
  /// Whether the swizzle moves no byte of this buffer (none, or a buffer within one 128-byte
  /// line): TMA may then write it without swizzling, from any 128-byte aligned address.
  bool swizzleIsIdentity() const { return swizzleBytes == 0 || bytes() <= 128; }
  /// The swizzle applied to a byte offset from the buffer's start.
  int64_t swizzle(int64_t offset) const;
};

/// The layout lowering gives a shared buffer of `shape` and element size `elementBytes`:
/// panels of 128-byte swizzled lines when rows are a multiple of 128 bytes (and 8 | rows),
/// 32- and 64-byte swizzled lines for 32- and 64-byte rows, panels of 64-byte swizzled lines
/// for other multiples of 64 bytes, otherwise row-major (swizzled within 128-byte lines where
/// the size allows).
SharedLayout chooseSharedLayout(const std::vector<int64_t> &shape, int64_t elementBytes);

/// Verifies that `l` is a bijection from the buffer's bytes onto [0, bytes) that moves 16-byte
/// chunks as units; returns a description of the first violation.
std::optional<std::string> verifySharedLayout(const SharedLayout &l);

/// A wgmma shared-memory matrix descriptor's fields (cookbook section 3.4), for an operand
/// stored with a canonical layout.
struct WgmmaDescriptor {
  int64_t startByte = 0; // from the buffer start
  int64_t lbo = 0, sbo = 0;
  int swizzleCode = 0; // descriptor encoding: 1 = 128B, 2 = 64B, 3 = 32B
  /// Bits 16..63 of the descriptor (everything but the start address).
  uint64_t highBits() const;
};

/// Descriptor of the 8*rows-by-32-byte k-slice (16 16-bit elements, or 32 float8 ones: one
/// instruction's k) at (`mnStart`, `kStart`) of a wgmma operand stored in `l`. `kMajor`: K runs
/// along the row (A stored M x K, B stored N x K); otherwise MN runs along the row (A stored K x M,
/// B stored K x N), which only 16-bit elements may be. Returns nullopt when the slice is not
/// addressable by one descriptor (non-canonical layout, misaligned start, MN-major float8).
std::optional<WgmmaDescriptor> wgmmaDescriptor(const SharedLayout &l, bool kMajor, int64_t mnStart,
                                               int64_t kStart, int64_t mnExtent);

} // namespace tilec::analysis
