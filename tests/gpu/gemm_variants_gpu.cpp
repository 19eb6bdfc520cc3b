// Every GEMM operand layout of tests/gpu/kernels/gemm_variants.tile (compiled for sm_90a, so on
// wgmma but for B in registers, on mma.sync): C = A @ B against a float64 reference on fresh random
// fp16 inputs, the output poisoned with NaN first, at a tile-multiple shape and ragged ones.
#include "gemm_variants.h"
#include "gpu_common.h"

#include <string>

using namespace gputest;

namespace {

struct Variant {
  const char *name;
  bool aKM; // A stored K x M (transpose_A)
  bool bKN; // B stored K x N (not transpose_B)
  std::function<CUresult(CUdeviceptr, CUdeviceptr, CUdeviceptr, int64_t, int64_t, int64_t)> run;
};

int check(const Variant &v, std::mt19937 &rng, int64_t M, int64_t N, int64_t K) {
  std::vector<uint16_t> a = randomHalves(M * K, rng), b = randomHalves(K * N, rng);
  DeviceBuffer da = upload(a), db = upload(b), dc = nanFloats(M * N);
  CK(v.run(da, db, dc, M, N, K));
  CK(cuCtxSynchronize());
  std::vector<float> out = download<float>(dc, M * N);
  std::vector<double> ref(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) {
        double x = fromHalf(v.aKM ? a[k * M + i] : a[i * K + k]);
        double y = fromHalf(v.bKN ? b[k * N + j] : b[j * K + k]);
        acc += x * y;
      }
      ref[i * N + j] = acc;
    }
  ErrorStats e = relError(out, ref);
  bool ok = e.nan == 0 && e.rel < 1e-5;
  std::printf("%-11s M=%-4lld N=%-4lld K=%-4lld rel.err %.2e unwritten %lld %s\n", v.name,
              (long long)M, (long long)N, (long long)K, e.rel, e.nan, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

} // namespace

int main() {
  init();
  CK(tile::gemm_variants::load());
  namespace g = tile::gemm_variants;
  std::vector<Variant> variants = {
      {"nt_64", false, false,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::nt_64(nullptr, A, B, C, M, K, N);
       }},
      {"nn_128", false, true,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::nn_128(nullptr, A, B, C, M, K, N);
       }},
      {"tn_64", true, false,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::tn_64(nullptr, A, B, C, K, M, N);
       }},
      {"nt_k32", false, false,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::nt_k32(nullptr, A, B, C, M, K, N);
       }},
      {"nt_k16", false, false,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::nt_k16(nullptr, A, B, C, M, K, N);
       }},
      {"nn_fullcol", false, true,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::nn_fullcol(nullptr, A, B, C, M, K, N);
       }},
      {"nt_breg", false, false,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::nt_breg(nullptr, A, B, C, M, K, N);
       }},
      {"nn_breg", false, true,
       [](auto A, auto B, auto C, int64_t M, int64_t N, int64_t K) {
         return g::nn_breg(nullptr, A, B, C, M, K, N);
       }},
  };
  std::mt19937 rng = freshRng();
  int failures = 0;
  for (const Variant &v : variants)
    for (auto [M, N, K] :
         {std::array<int64_t, 3>{64, 64, 64}, std::array<int64_t, 3>{256, 512, 192},
          std::array<int64_t, 3>{130, 200, 100}, std::array<int64_t, 3>{1, 7, 3}})
      failures += check(v, rng, M, N, K);
  return verdict("gemm_variants", failures);
}
