// float8 conversions of tests/gpu/kernels/fp8_casts.tile (sm_90a: cvt e4m3x2/e5m2x2), bit for
// bit against the host's exact decoding and round-to-nearest-even, saturating encoding: every
// float8 encoding decoded to float16, float32 and bfloat16; float32, float16 and bfloat16 values
// of every magnitude (subnormals, overflow, infinities, NaN, halfway cases) encoded; float8
// arithmetic; converting tile copies (global, shared, float32 and float8 fragments); scalar
// code. Outputs poisoned first, ragged lengths.
#include "fp8_casts.h"
#include "gpu_common.h"

#include <cmath>
#include <string>

using namespace gputest;

namespace {

namespace k = tile::fp8_casts;

int failures = 0;

void report(const char *what, int64_t n, long long bad, bool tailOk = true) {
  bool ok = bad == 0 && tailOk;
  failures += !ok;
  std::printf("%-34s n=%-6lld mismatches %-6lld %s%s\n", what, (long long)n, bad,
              ok ? "ok" : "FAIL", tailOk ? "" : " (wrote past the end)");
}

/// Equal as values, NaN matching NaN and zeros matching in sign.
bool same(float want, float got) {
  if (std::isnan(want) || std::isnan(got))
    return std::isnan(want) && std::isnan(got);
  return want == got && std::signbit(want) == std::signbit(got);
}
bool sameFp8(uint8_t want, uint8_t got, bool e4m3) {
  return same(fromFp8(want, e4m3), fromFp8(got, e4m3));
}

/// Every float8 encoding (in turn) then random bytes.
std::vector<uint8_t> allCodes(int64_t n, std::mt19937 &rng) {
  std::vector<uint8_t> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = i < 256 ? static_cast<uint8_t>(i) : static_cast<uint8_t>(rng() & 0xFF);
  return v;
}

/// float32 inputs that reach every case of the encoding: each float8 value and the points
/// halfway between neighbours, +-1 ulp around them, magnitudes from 2^-20 to 2^20, infinities
/// and NaN.
std::vector<float> hardFloats(int64_t n, std::mt19937 &rng) {
  std::vector<float> v;
  for (bool e4m3 : {true, false})
    for (int c = 0; c < 255; ++c) {
      float a = fromFp8(static_cast<uint8_t>(c), e4m3),
            b = fromFp8(static_cast<uint8_t>(c + 1), e4m3);
      if (!std::isfinite(a) || !std::isfinite(b))
        continue;
      float mid = a + (b - a) / 2;
      for (float x : {a, mid, std::nextafter(mid, -INFINITY), std::nextafter(mid, INFINITY)})
        v.insert(v.end(), {x, -x});
    }
  v.insert(v.end(), {INFINITY, -INFINITY, NAN, 0.f, -0.f, 1e30f, -1e30f, 448.f, 464.f, 480.f,
                     57344.f, 61440.f, 65504.f});
  std::uniform_real_distribution<float> expo(-20.f, 20.f);
  while (static_cast<int64_t>(v.size()) < n)
    v.push_back(((rng() & 1) ? 1.f : -1.f) * std::exp2(expo(rng)));
  v.resize(n);
  return v;
}

void fromFp8Test(std::mt19937 &rng, int64_t n) {
  std::vector<uint8_t> x = allCodes(n, rng), w = allCodes(n, rng);
  DeviceBuffer dx = upload(x), dw = upload(w), dh = poisoned(2 * n + kSlackBytes),
               df = poisoned(4 * n + kSlackBytes), db = poisoned(2 * n + kSlackBytes),
               dg = poisoned(2 * n + kSlackBytes);
  CK(k::from_fp8(nullptr, dx, dw, dh, df, db, dg, n));
  CK(cuCtxSynchronize());
  auto h = download<uint16_t>(dh, n), b = download<uint16_t>(db, n), g = download<uint16_t>(dg, n);
  auto f = download<float>(df, n);
  long long bad[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < n; ++i) {
    bad[0] += !same(fromFp8(x[i], true), fromHalf(h[i]));
    bad[1] += !same(fromFp8(x[i], true), f[i]);
    bad[2] += !same(fromFp8(w[i], false), fromBf16(b[i]));
    bad[3] += !same(fromFp8(w[i], false), fromHalf(g[i]));
  }
  report("e4m3 -> float16", n, bad[0], tailIntact(dh, 2 * n));
  report("e4m3 -> float32", n, bad[1], tailIntact(df, 4 * n));
  report("e5m2 -> bfloat16", n, bad[2], tailIntact(db, 2 * n));
  report("e5m2 -> float16", n, bad[3], tailIntact(dg, 2 * n));
}

void toFp8Test(std::mt19937 &rng, int64_t n) {
  std::vector<float> f = hardFloats(n, rng);
  std::vector<uint16_t> h(n), b(n);
  std::vector<float> hf(n), bf(n);
  for (int64_t i = 0; i < n; ++i) {
    h[i] = toHalf(f[i]);
    b[i] = toBf16(f[i]);
    hf[i] = fromHalf(h[i]);
    bf[i] = fromBf16(b[i]);
  }
  DeviceBuffer df = upload(f), dh = upload(h), db = upload(b), dx = poisoned(3 * n + kSlackBytes),
               dw = poisoned(3 * n + kSlackBytes);
  CK(k::to_fp8(nullptr, df, dh, db, dx, dw, n));
  CK(cuCtxSynchronize());
  auto x = download<uint8_t>(dx, 3 * n), w = download<uint8_t>(dw, 3 * n);
  const char *names[2][3] = {{"float32 -> e4m3", "float16 -> e4m3", "bfloat16 -> e4m3"},
                             {"float32 -> e5m2", "float16 -> e5m2", "bfloat16 -> e5m2"}};
  for (int t = 0; t < 2; ++t) {
    bool e4m3 = t == 0;
    const std::vector<uint8_t> &out = e4m3 ? x : w;
    for (int src = 0; src < 3; ++src) {
      const std::vector<float> &in = src == 0 ? f : src == 1 ? hf : bf;
      long long bad = 0;
      for (int64_t i = 0; i < n; ++i)
        if (!sameFp8(toFp8(in[i], e4m3), out[src * n + i], e4m3)) {
          if (bad++ < 3)
            std::printf("  %s: %.9g -> 0x%02x, expected 0x%02x\n", names[t][src], in[i],
                        out[src * n + i], toFp8(in[i], e4m3));
        }
      report(names[t][src], n, bad, tailIntact(e4m3 ? dx : dw, 3 * n));
    }
  }
}

void arithTest(std::mt19937 &rng, int64_t n) {
  std::vector<uint8_t> x = allCodes(n, rng), w = allCodes(n, rng);
  DeviceBuffer dx = upload(x), dw = upload(w), dy = poisoned(n + kSlackBytes),
               dz = poisoned(n + kSlackBytes);
  CK(k::fp8_arith(nullptr, dx, dw, dy, dz, n));
  CK(cuCtxSynchronize());
  auto y = download<uint8_t>(dy, n), z = download<uint8_t>(dz, n);
  long long badY = 0, badZ = 0;
  for (int64_t i = 0; i < n; ++i) {
    // In float32, rounded once to the destination, as the kernel computes.
    float xf = fromFp8(x[i], true);
    badY += !sameFp8(toFp8(xf * 2.0f, true), y[i], true);
    float x5 = fromFp8(toFp8(xf, false), false);
    badZ += !sameFp8(toFp8(fromFp8(w[i], false) - x5, false), z[i], false);
  }
  report("e4m3 * 2 (in float32)", n, badY, tailIntact(dy, n));
  report("e5m2 - e5m2(e4m3) (in float32)", n, badZ, tailIntact(dz, n));
}

void copiesTest(std::mt19937 &rng, int64_t M, int64_t N) {
  std::vector<uint8_t> x = allCodes(M * N, rng);
  DeviceBuffer dx = upload(x), dh = poisoned(2 * M * N + kSlackBytes),
               dw = poisoned(M * N + kSlackBytes);
  CK(k::tile_copies(nullptr, dx, dh, dw, M, N));
  CK(cuCtxSynchronize());
  auto h = download<uint16_t>(dh, M * N);
  auto w = download<uint8_t>(dw, M * N);
  long long badH = 0, badW = 0;
  for (int64_t i = 0; i < M * N; ++i) {
    float half = fromFp8(x[i], true) * 0.5f;
    badH += !same(half, fromHalf(h[i]));
    badW += !sameFp8(toFp8(half, false), w[i], false);
  }
  std::string shape = "copy e4m3 -> smem -> f32 -> ";
  report((shape + "f16").c_str(), M * N, badH, tailIntact(dh, 2 * M * N));
  report((shape + "e5m2").c_str(), M * N, badW, tailIntact(dw, M * N));
}

void fragmentsTest(std::mt19937 &rng, int64_t M) {
  std::vector<float> x = hardFloats(M * 64, rng);
  DeviceBuffer dx = upload(x), dy = poisoned(2 * M * 64 + kSlackBytes);
  CK(k::fp8_fragments(nullptr, dx, dy, M));
  CK(cuCtxSynchronize());
  auto y = download<uint16_t>(dy, M * 64);
  long long bad = 0;
  for (int64_t i = 0; i < M * 64; ++i) {
    // float32 -> e4m3 (shared) -> e5m2 (fragment) -> * 2 in float32 -> e5m2 -> float16.
    float e5 = fromFp8(toFp8(fromFp8(toFp8(x[i], true), true), false), false);
    bad += !same(fromFp8(toFp8(e5 * 2.0f, false), false), fromHalf(y[i]));
  }
  report("f32 -> e4m3 smem -> e5m2 frag -> f16", M * 64, bad, tailIntact(dy, 2 * M * 64));
}

void scalarTest(std::mt19937 &rng, int64_t n) {
  std::vector<uint8_t> x = randomFp8(n, rng, true);
  DeviceBuffer dx = upload(x), dy = nanFloats(2), dz = poisoned(1);
  CK(k::scalar_code(nullptr, dx, dy, dz, n));
  CK(cuCtxSynchronize());
  auto y = download<float>(dy, 2);
  auto z = download<uint8_t>(dz, 1);
  float acc = 0.f;
  for (int64_t i = 0; i < n; ++i)
    acc += fromFp8(x[i], true);
  uint8_t v = toFp8(acc, false);
  long long bad = !same(acc, y[0]) + !same(fromFp8(v, false), y[1]) + !sameFp8(v, z[0], false);
  report("scalar: sum in float32 -> e5m2", n, bad);
}

} // namespace

int main() {
  init();
  CK(k::load());
  std::mt19937 rng = freshRng();
  for (int64_t n : {256, 1000, 4099, 1 << 16})
    fromFp8Test(rng, n);
  for (int64_t n : {4097, 1 << 14})
    toFp8Test(rng, n);
  for (int64_t n : {300, 1 << 16})
    arithTest(rng, n);
  for (auto [M, N] : {std::pair<int64_t, int64_t>{64, 128}, {45, 100}})
    copiesTest(rng, M, N);
  for (int64_t M : {64, 77})
    fragmentsTest(rng, M);
  scalarTest(rng, 77);
  return verdict("fp8_casts", failures);
}
