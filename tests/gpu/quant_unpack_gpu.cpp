// std.quant (tests/gpu/kernels/quant_unpack.tile) against the CPU, bit for bit: every byte value
// (then random bytes up to a ragged size) unpacked into unsigned and two's complement 4- and
// 2-bit fields, converted to float16 and bfloat16 by the magic-number macros, and dequantized
// with random float16 scales and zero points (each float16 operation rounded as IEEE rounds
// it). Poisoned bytes behind every output.
#include "gpu_common.h"
#include "quant_unpack.h"

#include <cstring>

using namespace gputest;

namespace {

int signedField(int w, int pos, int bits) {
  int v = (w >> (pos * bits)) & ((1 << bits) - 1);
  return v >= (1 << (bits - 1)) ? v - (1 << bits) : v;
}

} // namespace

int main() {
  init();
  CK(tile::quant_unpack::load());
  std::mt19937 rng = freshRng();
  const int64_t N = 1000; // every byte value, then random ones; not a multiple of the block
  std::vector<uint8_t> w(N);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < N; ++i)
    w[i] = static_cast<uint8_t>(i < 256 ? i : byte(rng));
  std::uniform_real_distribution<float> scale(0.001f, 2.f), zero(0.f, 15.f);
  std::vector<uint16_t> s(N), z(N);
  for (int64_t i = 0; i < N; ++i) {
    s[i] = toHalf(scale(rng));
    z[i] = toHalf(zero(rng));
  }
  std::vector<uint16_t> u4(N * 2), i4(N * 2), i4b(N * 2), d4(N * 2), d4z(N * 2), i2(N * 4),
      i2b(N * 4), u7b(N);
  for (int64_t i = 0; i < N; ++i) {
    for (int p = 0; p < 2; ++p) {
      int u = (w[i] >> (4 * p)) & 15, v = signedField(w[i], p, 4);
      u4[i * 2 + p] = toHalf(static_cast<float>(u));
      i4[i * 2 + p] = toHalf(static_cast<float>(v));
      i4b[i * 2 + p] = toBf16(static_cast<float>(v));
      // float16 products and differences of these operands are exact in float32: one rounding.
      d4[i * 2 + p] = toHalf(static_cast<float>(v) * fromHalf(s[i]));
      float diff = fromHalf(toHalf(static_cast<float>(u) - fromHalf(z[i])));
      d4z[i * 2 + p] = toHalf(diff * fromHalf(s[i]));
    }
    for (int p = 0; p < 4; ++p) {
      int v = signedField(w[i], p, 2);
      i2[i * 4 + p] = toHalf(static_cast<float>(v));
      i2b[i * 4 + p] = toBf16(static_cast<float>(v));
    }
    u7b[i] = toBf16(static_cast<float>(w[i] & 127));
  }
  DeviceBuffer dw = upload(w), ds = upload(s), dz = upload(z);
  auto out = [](size_t n) { return poisoned(n * 2 + kSlackBytes); };
  DeviceBuffer du4 = out(u4.size()), di4 = out(i4.size()), di4b = out(i4b.size()),
               di2 = out(i2.size()), di2b = out(i2b.size()), du7b = out(u7b.size()),
               dd4 = out(d4.size()), dd4z = out(d4z.size());
  CK(tile::quant_unpack::quant_unpack(nullptr, dw, ds, dz, du4, di4, di4b, di2, di2b, du7b, dd4,
                                      dd4z, N));
  CK(cuCtxSynchronize());
  int failures = 0;
  failures += compareExact("U4", du4, u4);
  failures += compareExact("I4", di4, i4);
  failures += compareExact("I4b", di4b, i4b);
  failures += compareExact("I2", di2, i2);
  failures += compareExact("I2b", di2b, i2b);
  failures += compareExact("U7b", du7b, u7b);
  failures += compareExact("D4", dd4, d4);
  failures += compareExact("D4z", dd4z, d4z);
  return verdict("quant_unpack", failures);
}
