// 64-bit reductions across threads (tests/gpu/kernels/reduce64.tile) against the CPU, exactly:
// int64 row sums (wrapping as int64 does) and maxima of values of every size (INT64_MIN and
// INT64_MAX included, so that both 32-bit halves of a shuffle matter), float64 row sums of
// values whose sums are exact in any order (integers times 2^-8 below 2^40) and minima. An odd
// row count, so the last block's second row is outside; poisoned bytes behind every output.
#include "gpu_common.h"
#include "reduce64.h"

#include <climits>

using namespace gputest;

int main() {
  init();
  CK(tile::reduce64::load());
  std::mt19937 rng = freshRng();
  const int64_t M = 999, NA = 1024, NF = 128;
  std::vector<int64_t> a(M * NA);
  std::vector<double> f(M * NF);
  std::uniform_int_distribution<int64_t> any(INT64_MIN, INT64_MAX), small(-(1LL << 40), 1LL << 40);
  for (int64_t i = 0; i < M * NA; ++i)
    a[i] = (i / NA) % 2 ? any(rng) : small(rng);
  a[3] = INT64_MIN;
  a[NA + 9] = INT64_MAX;
  for (double &v : f)
    v = static_cast<double>(small(rng)) / 256.0;
  std::vector<int64_t> sum(M, 0), mx(M, INT64_MIN);
  std::vector<double> fsum(M, 0.0), fmin(M, INFINITY);
  for (int64_t i = 0; i < M; ++i) {
    uint64_t s = 0;
    for (int64_t j = 0; j < NA; ++j) {
      s += static_cast<uint64_t>(a[i * NA + j]);
      mx[i] = std::max(mx[i], a[i * NA + j]);
    }
    sum[i] = static_cast<int64_t>(s);
    for (int64_t j = 0; j < NF; ++j) {
      fsum[i] += f[i * NF + j];
      fmin[i] = std::min(fmin[i], f[i * NF + j]);
    }
  }
  DeviceBuffer da = upload(a), df = upload(f);
  auto out = [](size_t bytes) { return poisoned(bytes + kSlackBytes); };
  DeviceBuffer ds = out(M * 8), dx = out(M * 8), dfs = out(M * 8), dfn = out(M * 8);
  CK(tile::reduce64::reduce64(nullptr, da, df, ds, dx, dfs, dfn, M));
  CK(cuCtxSynchronize());
  int failures = 0;
  failures += compareExact("i64sum", ds, sum);
  failures += compareExact("i64max", dx, mx);
  failures += compareExact("f64sum", dfs, fsum);
  failures += compareExact("f64min", dfn, fmin);
  return verdict("reduce64", failures);
}
