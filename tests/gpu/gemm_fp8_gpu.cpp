// float8 GEMMs of tests/gpu/kernels/gemm_fp8.tile (sm_90a wgmma, float32 accumulation): C = A @
// B^T with A stored M x K and B stored N x K against a float64 reference computed from the
// exact float8 values, on fresh random inputs, the output poisoned first, at a tile-multiple
// shape and ragged ones; then the time of e4m3_128x128 at 4096^3.
#include "gemm_fp8.h"
#include "gpu_common.h"

#include <array>
#include <string>

using namespace gputest;

namespace {

using Launch =
    std::function<CUresult(CUdeviceptr, CUdeviceptr, CUdeviceptr, int64_t, int64_t, int64_t)>;

struct Variant {
  const char *name;
  bool aE4m3, bE4m3;
  bool halfOut; // C is float16 (scaled by kScale) instead of float32
  Launch run;
};

constexpr float kScale = 0.25f;

int check(const Variant &v, std::mt19937 &rng, int64_t M, int64_t N, int64_t K) {
  std::vector<uint8_t> a = randomFp8(M * K, rng, v.aE4m3), b = randomFp8(N * K, rng, v.bE4m3);
  size_t outBytes = M * N * (v.halfOut ? 2 : 4);
  DeviceBuffer da = upload(a), db = upload(b), dc = poisoned(outBytes + kSlackBytes);
  CK(v.run(da, db, dc, M, N, K));
  CK(cuCtxSynchronize());
  std::vector<float> out;
  if (v.halfOut)
    out = halvesToFloats(download<uint16_t>(dc, M * N));
  else
    out = download<float>(dc, M * N);
  bool tailOk = tailIntact(dc, outBytes);
  std::vector<float> fa(a.size()), fb(b.size());
  for (size_t i = 0; i < a.size(); ++i)
    fa[i] = fromFp8(a[i], v.aE4m3);
  for (size_t i = 0; i < b.size(); ++i)
    fb[i] = fromFp8(b[i], v.bE4m3);
  std::vector<double> ref(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += static_cast<double>(fa[i * K + k]) * fb[j * K + k];
      ref[i * N + j] = v.halfOut ? acc * kScale : acc;
    }
  ErrorStats e = relError(out, ref);
  // Hopper's float8 wgmma accumulates with fewer mantissa bits than float32 (measured here:
  // 1e-4 to 3e-4 relative at K <= 384, growing with K); a wrong layout or descriptor gives
  // errors near 1. float16 output adds one rounding to 11 bits.
  double tol = v.halfOut ? 2e-3 : 1e-3;
  bool ok = e.nan == 0 && e.rel < tol && tailOk;
  std::printf("%-16s M=%-4lld N=%-4lld K=%-4lld rel.err %.2e unwritten %lld %s%s\n", v.name,
              (long long)M, (long long)N, (long long)K, e.rel, e.nan, ok ? "ok" : "FAIL",
              tailOk ? "" : " (wrote past the end)");
  return ok ? 0 : 1;
}

} // namespace

int main() {
  init();
  CK(tile::gemm_fp8::load());
  namespace g = tile::gemm_fp8;
  std::vector<Variant> variants = {
      {"e4m3_128x128", true, true, false,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::e4m3_128x128(nullptr, A, B, C, M, K, N);
       }},
      {"e5m2_k128", false, false, false,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::e5m2_k128(nullptr, A, B, C, M, K, N);
       }},
      {"mixed_k32", true, false, false,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::mixed_k32(nullptr, A, B, C, M, K, N);
       }},
      {"e4m3_scaled_f16", true, true, true,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::e4m3_scaled_f16(nullptr, A, B, C, kScale, M, K, N);
       }},
  };
  std::mt19937 rng = freshRng();
  int failures = 0;
  for (const Variant &v : variants)
    for (auto [M, N, K] :
         {std::array<int64_t, 3>{128, 256, 128}, std::array<int64_t, 3>{256, 512, 384},
          std::array<int64_t, 3>{200, 130, 96}, std::array<int64_t, 3>{1, 7, 40},
          std::array<int64_t, 3>{333, 517, 200}})
      failures += check(v, rng, M, N, K);

  // Speed of the plain e4m3 kernel at 4096^3 (no comparison with cuBLAS here).
  {
    const int64_t S = 4096;
    std::vector<uint8_t> a = randomFp8(S * S, rng, true), b = randomFp8(S * S, rng, true);
    DeviceBuffer da = upload(a), db = upload(b), dc(S * S * 4);
    double ms = medianMs([&] { CK(g::e4m3_128x128(nullptr, da, db, dc, S, S, S)); });
    std::printf("RESULT gemm_fp8 e4m3_128x128 sm_90a 4096^3:");
    printTflops(ms, 2.0 * S * S * S);
    std::printf("\n");
  }
  return verdict("gemm_fp8", failures);
}
