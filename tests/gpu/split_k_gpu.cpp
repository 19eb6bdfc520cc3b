// Split-K GEMM of tests/gpu/kernels/split_k.tile: every block adds its partial product over one
// third of K into C with an atomic_add per Parallel iteration. C = A @ B (fp16 in) into a zeroed
// float32 C and a zeroed float16 C, against a float64 reference on fresh random inputs, at
// ragged shapes (partial tiles in M, N and K, slices that run past K) and an aligned one. An
// element added twice or never shows up in the error; a masked-out add past the last row
// changes the poisoned bytes behind C.
#include "gpu_common.h"
#include "split_k.h"

using namespace gputest;

namespace {

// Must match `splits` in split_k.tile: the reference does not depend on it, the report does.
constexpr int kSplits = 3;

std::vector<double> reference(const std::vector<uint16_t> &a, const std::vector<uint16_t> &b,
                              int64_t M, int64_t N, int64_t K) {
  std::vector<double> af(a.size()), bf(b.size()), c(M * N, 0.0);
  for (size_t i = 0; i < a.size(); ++i)
    af[i] = fromHalf(a[i]);
  for (size_t i = 0; i < b.size(); ++i)
    bf[i] = fromHalf(b[i]);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      double x = af[i * K + k];
      for (int64_t j = 0; j < N; ++j)
        c[i * N + j] += x * bf[k * N + j];
    }
  return c;
}

/// Runs one kernel on a C of `elemBytes`-byte elements zeroed in front of poisoned slack, and
/// compares the result (read by `toFloats`) with `ref`.
template <class Launch, class ToFloats>
int check(const char *name, int elemBytes, double tolerance, Launch launch, ToFloats toFloats,
          const std::vector<double> &ref, int64_t M, int64_t N, int64_t K) {
  size_t bytes = static_cast<size_t>(M * N) * elemBytes;
  DeviceBuffer dc = poisoned(bytes + kSlackBytes);
  CK(cuMemsetD8(dc, 0, bytes)); // C accumulates the splits' partial products
  CK(launch(dc));
  CK(cuCtxSynchronize());
  std::vector<float> out = toFloats(dc, static_cast<size_t>(M * N));
  bool tailOk = tailIntact(dc, bytes);
  ErrorStats e = relError(out, ref);
  bool ok = e.nan == 0 && e.rel < tolerance && tailOk;
  std::printf("%-11s M=%-4lld N=%-4lld K=%-5lld splits=%d rel.err %.2e (limit %.0e) nan %lld%s "
              "%s\n",
              name, (long long)M, (long long)N, (long long)K, kSplits, e.rel, tolerance, e.nan,
              tailOk ? "" : " (wrote past the end)", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

int runShape(std::mt19937 &rng, int64_t M, int64_t N, int64_t K) {
  namespace sk = tile::split_k;
  std::vector<uint16_t> a = randomHalves(M * K, rng), b = randomHalves(K * N, rng);
  DeviceBuffer da = upload(a), db = upload(b);
  std::vector<double> ref = reference(a, b, M, N, K);
  int failures = 0;
  // fp32: the products of halves are exact, the sums carry float32 rounding (order varies).
  failures += check(
      "split_k_f32", 4, 1e-5,
      [&](CUdeviceptr c) { return sk::split_k_f32(nullptr, da, db, c, M, K, N); },
      [](CUdeviceptr p, size_t n) { return download<float>(p, n); }, ref, M, N, K);
  // fp16: each partial product is rounded to half and each add rounds again (2^-11 relative a
  // step), a few 1e-4 of the result's norm in all.
  failures += check(
      "split_k_f16", 2, 2e-3,
      [&](CUdeviceptr c) { return sk::split_k_f16(nullptr, da, db, c, M, K, N); },
      [](CUdeviceptr p, size_t n) { return halvesToFloats(download<uint16_t>(p, n)); }, ref, M, N,
      K);
  return failures;
}

} // namespace

int main() {
  init();
  CK(tile::split_k::load());
  std::mt19937 rng = freshRng();
  int failures = 0;
  struct Shape {
    int64_t M, N, K;
  };
  // Ragged in every dimension; K=1000 is 31.25 tiles of 32, so the last slice ends in a partial
  // tile and one tile wholly past K; K=5 leaves two slices with nothing to add; aligned last.
  for (Shape s : {Shape{200, 130, 1000}, Shape{1, 7, 5}, Shape{130, 64, 100}, Shape{256, 256, 768}})
    failures += runShape(rng, s.M, s.N, s.K);
  return verdict("split_k", failures);
}
