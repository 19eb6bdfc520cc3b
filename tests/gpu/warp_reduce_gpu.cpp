// samples/warp_reduce.tile, written with the thread-level primitives (thread_id, lane_id,
// warp_id, shfl_xor / shfl_down / shfl_idx, sync_threads, shared elements by index): row sums
// against a double-precision CPU sum, row maxima exactly. Fresh random inputs each run, poisoned
// bytes behind each output, ragged widths (a partial warp, fewer elements than threads, more
// than one per thread) and a row count that is not a multiple of anything.
#include "gpu_common.h"
#include "warp_reduce.h"

#include <cmath>
#include <cstring>

using namespace gputest;

namespace {

int runShape(std::mt19937 &rng, int64_t M, int64_t N) {
  std::vector<float> x = randomFloats(M * N, rng, 10.f);
  std::vector<double> sum(M, 0.0);
  std::vector<float> mx(M, -INFINITY);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      sum[i] += x[i * N + j];
      mx[i] = std::max(mx[i], x[i * N + j]);
    }
  DeviceBuffer dx = upload(x);
  DeviceBuffer dsum = poisoned(M * sizeof(float) + kSlackBytes);
  DeviceBuffer dmax = poisoned(M * sizeof(float) + kSlackBytes);
  CK(tile::warp_reduce::warp_reduce(nullptr, dx, dsum, dmax, M, N));
  CK(cuCtxSynchronize());
  std::vector<float> gotSum = download<float>(dsum, M), gotMax = download<float>(dmax, M);
  ErrorStats e = relError(gotSum, sum);
  size_t wrongMax = 0;
  for (int64_t i = 0; i < M; ++i)
    wrongMax += std::memcmp(&gotMax[i], &mx[i], sizeof(float)) != 0;
  bool tails = tailIntact(dsum, M * sizeof(float)) && tailIntact(dmax, M * sizeof(float));
  // float32 sums of up to N terms in another order than the reference's.
  bool ok = e.rel < 1e-5 && e.nan == 0 && wrongMax == 0 && tails;
  std::printf("M=%-6lld N=%-6lld sum rel.err %.2e nan %lld, max wrong %zu of %lld%s %s\n",
              (long long)M, (long long)N, e.rel, e.nan, wrongMax, (long long)M,
              tails ? "" : " (wrote past the end)", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

} // namespace

int main() {
  init();
  CK(tile::warp_reduce::load());
  std::mt19937 rng = freshRng();
  int failures = 0;
  struct Shape {
    int64_t M, N;
  };
  for (Shape s : {Shape{1, 1}, Shape{3, 31}, Shape{1001, 100}, Shape{257, 1000}, Shape{64, 4099}})
    failures += runShape(rng, s.M, s.N);
  return verdict("warp_reduce", failures);
}
