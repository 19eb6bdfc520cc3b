#include "threadir/InterpreterHopper.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstring>

namespace tilec::thir::interp {

uint8_t *SharedView::at(int64_t offset, int64_t n) const {
  if (offset < 0 || offset + n > bytes)
    throw Stop(fmt::format("access of shared bytes [{}, {}) of {}", offset, offset + n, bytes));
  return data + offset;
}

int64_t swizzleAddress(int64_t address, int swizzleBytes) {
  // 128B: bits 4-6 ^= bits 7-9; 64B: bits 4-5 ^= bits 7-8; 32B: bit 4 ^= bit 7.
  const int64_t lineMask = swizzleBytes == 128  ? 7
                           : swizzleBytes == 64 ? 3
                           : swizzleBytes == 32 ? 1
                                                : 0;
  return address ^ (((address >> 7) & lineMask) << 4);
}

int64_t TensorMapView::boxBytes() const {
  int64_t n = elementBytes;
  for (int b : box)
    n *= b;
  return n;
}

int64_t copyTmaBox(const TensorMapView &map, const std::vector<int64_t> &coords,
                   const SharedView &smem, int64_t dst) {
  const size_t rank = map.dims.size();
  if (coords.size() != rank || map.box.size() != rank || map.strides.size() + 1 != rank)
    throw Stop(
        fmt::format("a TMA load of {} coordinates from a map of rank {}", coords.size(), rank));
  if (dst % 128 != 0)
    throw Stop(fmt::format("a TMA load into shared byte {}, not 128-byte aligned", dst));
  const int64_t eb = map.elementBytes, total = map.boxBytes() / eb;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < total; ++e) {
    bool inside = true;
    int64_t src = 0;
    for (size_t i = 0; i < rank; ++i) {
      const int64_t c = coords[i] + idx[i];
      inside = inside && c >= 0 && c < map.dims[i];
      src += c * (i == 0 ? eb : map.strides[i - 1]);
    }
    const int64_t to =
        swizzleAddress(smem.windowBase + dst + e * eb, map.swizzleBytes) - smem.windowBase;
    uint8_t *p = smem.at(to, eb);
    if (!inside) {
      std::memset(p, 0, static_cast<size_t>(eb));
    } else {
      if (src < 0 || src + eb > static_cast<int64_t>(map.tensor->size()))
        throw Stop(fmt::format("a TMA load of tensor bytes [{}, {}) of {}", src, src + eb,
                               map.tensor->size()));
      std::memcpy(p, map.tensor->data() + src, static_cast<size_t>(eb));
    }
    for (size_t i = 0; i < rank && ++idx[i] == map.box[i]; ++i)
      idx[i] = 0;
  }
  return total * eb;
}

namespace {

/// A wgmma shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2.2): byte address of the
/// operand, leading and stride byte offsets, and swizzle in bytes.
struct Descriptor {
  int64_t start, lbo, sbo;
  int swizzle;
};

Descriptor decode(uint64_t d) {
  if ((d >> 49) & 7)
    throw Stop("a wgmma descriptor with a matrix base offset (the interpreter supports none)");
  static constexpr int kSwizzle[4] = {0, 128, 64, 32};
  return {static_cast<int64_t>(d & 0x3FFF) << 4, static_cast<int64_t>((d >> 16) & 0x3FFF) << 4,
          static_cast<int64_t>((d >> 32) & 0x3FFF) << 4, kSwizzle[d >> 62]};
}

/// The shared-window address of element (mn, k) of an operand (the canonical layouts of the
/// PTX ISA's table, cookbook 3.5): K-major rows of 16-byte core-matrix lines or of one swizzle
/// line; MN-major columns of them.
int64_t operandAddress(const Descriptor &d, bool mnMajor, int64_t mn, int64_t k, int64_t eb) {
  int64_t a;
  if (!mnMajor) {
    const int64_t kb = k * eb;
    a = d.swizzle == 0 ? d.start + mn % 8 * 16 + mn / 8 * d.sbo + kb % 16 + kb / 16 * d.lbo
                       : d.start + mn % 8 * d.swizzle + mn / 8 * d.sbo + kb;
  } else if (d.swizzle == 0) {
    const int64_t t = 16 / eb;
    a = d.start + mn % t * eb + mn / t * d.sbo + k % 8 * 16 + k / 8 * d.lbo;
  } else {
    const int64_t line = d.swizzle / eb;
    a = d.start + mn % line * eb + mn / line * d.lbo + k % 8 * d.swizzle + k / 8 * d.sbo;
  }
  return swizzleAddress(a, d.swizzle);
}

double operandElement(const SharedView &smem, const Descriptor &d, bool mnMajor, int64_t mn,
                      int64_t k, DType t, ByteRange &read) {
  const int64_t eb = widthBits(t) / 8;
  const int64_t offset = operandAddress(d, mnMajor, mn, k, eb) - smem.windowBase;
  read.begin = std::min(read.begin, offset);
  read.end = std::max(read.end, offset + eb);
  const uint8_t *p = smem.at(offset, eb);
  uint64_t bits = 0;
  std::memcpy(&bits, p, static_cast<size_t>(eb));
  return toDouble(bits, t);
}

} // namespace

std::vector<ByteRange> runWgmmaGroup(const Wgmma &w, const SharedView &smem, WgmmaGroup &g) {
  std::vector<ByteRange> reads;
  const int n = w.n, k = w.k();
  const DType at = w.inputType, bt = w.bType();
  const DType accType = g.acc[0].type.elem;
  for (int t = 0; t < 128; ++t)
    if (g.clear[t])
      for (int i = 0; i < g.acc[t].type.lanes; ++i)
        g.acc[t].bits[i] = fromDouble(0.0, accType);
  std::vector<double> A(static_cast<size_t>(64 * k)), B(static_cast<size_t>(n * k)),
      D(static_cast<size_t>(64 * n));
  for (size_t ii = 0; ii < w.instrs.size(); ++ii) {
    const int first = w.instrs[ii].accFirst;
    if (w.aInRegisters) {
      // The mma.sync A fragment of each warp's 16 rows: register j holds row g + 8 (j % 2),
      // columns from 8 (j / 2) (16-bit; two a register) or 16 (j / 2) (8-bit; four).
      const int per = 32 / widthBits(at), bits = widthBits(at);
      for (int t = 0; t < 128; ++t) {
        const int lane = t % 32, row0 = 16 * (t / 32) + lane / 4, q = lane % 4;
        for (int j = 0; j < 4; ++j)
          for (int h = 0; h < per; ++h) {
            const int row = row0 + 8 * (j % 2), col = per * q + h + 4 * per * (j / 2);
            uint64_t reg = g.aRegisters[ii][t].bits[j];
            A[static_cast<size_t>(row * k + col)] =
                toDouble((reg >> (bits * h)) & ((uint64_t{1} << bits) - 1), at);
          }
      }
    } else {
      Descriptor da = decode(g.aDesc[ii * 128]);
      ByteRange &read = reads.emplace_back(ByteRange{INT64_MAX, INT64_MIN});
      for (int m = 0; m < 64; ++m)
        for (int kk = 0; kk < k; ++kk)
          A[static_cast<size_t>(m * k + kk)] =
              operandElement(smem, da, w.aMnMajor, m, kk, at, read);
    }
    Descriptor db = decode(g.bDesc[ii * 128]);
    ByteRange &read = reads.emplace_back(ByteRange{INT64_MAX, INT64_MIN});
    for (int j = 0; j < n; ++j)
      for (int kk = 0; kk < k; ++kk)
        B[static_cast<size_t>(j * k + kk)] = operandElement(smem, db, w.bMnMajor, j, kk, bt, read);
    // The accumulator fragment (cookbook 3.2): lane i of thread t holds row
    // 16 (t / 32) + g + 8 ((i >> 1) & 1), column 8 (i >> 2) + 2 q + (i & 1).
    auto place = [&](int t, int i) {
      const int lane = t % 32;
      return (16 * (t / 32) + lane / 4 + 8 * ((i >> 1) & 1)) * n + 8 * (i >> 2) + 2 * (lane % 4) +
             (i & 1);
    };
    for (int t = 0; t < 128; ++t)
      for (int i = 0; i < n / 2; ++i)
        D[static_cast<size_t>(place(t, i))] = toDouble(g.acc[t].bits[first + i], accType);
    for (int m = 0; m < 64; ++m)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int kk = 0; kk < k; ++kk)
          s += A[static_cast<size_t>(m * k + kk)] * B[static_cast<size_t>(j * k + kk)];
        D[static_cast<size_t>(m * n + j)] += s;
      }
    for (int t = 0; t < 128; ++t)
      for (int i = 0; i < n / 2; ++i)
        g.acc[t].bits[first + i] = fromDouble(D[static_cast<size_t>(place(t, i))], accType);
  }
  return reads;
}

} // namespace tilec::thir::interp
