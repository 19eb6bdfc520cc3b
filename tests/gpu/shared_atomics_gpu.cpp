// Atomics into shared memory (tests/gpu/kernels/shared_atomics.tile) against the CPU, exactly:
// per-block histograms of 16 bins (int32 adds), maxima (float32, a compare-and-swap loop) and
// sums of halves (float16 adds) in shared memory, then added into global totals; and whole tiles
// added and maxed into shared buffers (tile_atomics) and into regions of one (region_atomics).
// Ragged sizes, fresh random inputs, and poisoned bytes behind every output.
#include "gpu_common.h"
#include "shared_atomics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

using namespace gputest;

namespace {

/// tile_atomics: per block of 32 rows, the sum (atomic_add from a fragment) and the maximum
/// (atomic_max from a shared buffer) of X's 64-column chunks, zero past C, and the sum of the
/// chunks' row sums (atomic_add from a fragment of row values). X holds small integers, so
/// every sum is exact in whatever order the GPU adds.
int checkTileAtomics(std::mt19937 &rng) {
  int failures = 0;
  std::uniform_int_distribution<int> small(-8, 8);
  for (auto [M, C] : {std::pair<int64_t, int64_t>{33, 100}, {1000, 64}, {77, 1000}}) {
    std::vector<float> x(static_cast<size_t>(M * C));
    for (float &v : x)
      v = static_cast<float>(small(rng));
    std::vector<float> sum(static_cast<size_t>(M * 64), 0.0f), mx(sum.size(), -INFINITY),
        rows(static_cast<size_t>(M), 0.0f);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t c = 0; c < (C + 63) / 64; ++c)
        for (int64_t j = 0; j < 64; ++j) {
          float v = c * 64 + j < C ? x[i * C + c * 64 + j] : 0.0f;
          sum[i * 64 + j] += v;
          mx[i * 64 + j] = std::max(mx[i * 64 + j], v);
          rows[i] += v;
        }
    DeviceBuffer dx = upload(x);
    const size_t bytes = sum.size() * 4, rowBytes = rows.size() * 4;
    DeviceBuffer ds = poisoned(bytes + kSlackBytes), dm = poisoned(bytes + kSlackBytes),
                 dr = poisoned(rowBytes + kSlackBytes);
    CK(tile::shared_atomics::tile_atomics(nullptr, dx, ds, dm, dr, M, C));
    CK(cuCtxSynchronize());
    std::vector<float> gotS = download<float>(ds, sum.size()),
                       gotM = download<float>(dm, sum.size()),
                       gotR = download<float>(dr, rows.size());
    int wrong = 0;
    for (size_t e = 0; e < sum.size(); ++e)
      wrong += std::memcmp(&gotS[e], &sum[e], 4) != 0 || std::memcmp(&gotM[e], &mx[e], 4) != 0;
    for (size_t r = 0; r < rows.size(); ++r)
      wrong += std::memcmp(&gotR[r], &rows[r], 4) != 0;
    bool tails = tailIntact(ds, bytes) && tailIntact(dm, bytes) && tailIntact(dr, rowBytes);
    bool ok = wrong == 0 && tails;
    std::printf("tile_atomics M=%lld C=%lld: %d wrong of %zu (row 0 sum %g/%g)%s %s\n",
                static_cast<long long>(M), static_cast<long long>(C), wrong,
                2 * sum.size() + rows.size(), gotR[0], rows[0],
                tails ? "" : " (wrote past the end)", ok ? "PASS" : "FAIL");
    failures += !ok;
  }
  return failures;
}

/// region_atomics: per block of 2 rows of X (zero past N), the 4 x 64 buffer its atomics build
/// in regions of shared memory (see the kernel). Small integers: exact in any order.
int checkRegionAtomics(std::mt19937 &rng) {
  int failures = 0;
  std::uniform_int_distribution<int> small(-8, 8);
  for (int64_t N : {int64_t{13}, int64_t{2}, int64_t{1}}) {
    const int64_t G = (N + 1) / 2;
    std::vector<float> x(static_cast<size_t>(N * 64));
    for (float &v : x)
      v = static_cast<float>(small(rng));
    auto X = [&](int64_t r, int64_t j) { return r < N ? x[r * 64 + j] : 0.0f; };
    std::vector<float> want(static_cast<size_t>(G * 256), 0.0f);
    for (int64_t b = 0; b < G; ++b) {
      float *S = &want[b * 256];
      for (int64_t j = 0; j < 64; ++j) {
        S[64 + j] += X(2 * b, j);
        S[128 + j] += X(2 * b, j);
        S[192 + j] += X(2 * b + 1, j);
        if (j < 32) {
          S[j] += X(2 * b, j);
          S[64 + j] += X(2 * b + 1, j);
        }
        S[(b % 4) * 64 + j] = std::max(S[(b % 4) * 64 + j], X(2 * b, j));
        if (b < 4)
          S[b * 64 + j] += X(2 * b, j);
      }
    }
    DeviceBuffer dx = upload(x);
    const size_t bytes = want.size() * 4;
    DeviceBuffer dr = poisoned(bytes + kSlackBytes);
    CK(tile::shared_atomics::region_atomics(nullptr, dx, dr, N, G));
    CK(cuCtxSynchronize());
    std::vector<float> got = download<float>(dr, want.size());
    int wrong = 0;
    for (size_t e = 0; e < want.size(); ++e)
      wrong += std::memcmp(&got[e], &want[e], 4) != 0;
    bool tail = tailIntact(dr, bytes), ok = wrong == 0 && tail;
    std::printf("region_atomics N=%lld: %d wrong of %zu%s %s\n", static_cast<long long>(N), wrong,
                want.size(), tail ? "" : " (wrote past the end)", ok ? "PASS" : "FAIL");
    failures += !ok;
  }
  return failures;
}

} // namespace

int main() {
  init();
  CK(tile::shared_atomics::load());
  std::mt19937 rng = freshRng();
  const int64_t N = 100003;
  std::vector<int32_t> x(N);
  std::uniform_int_distribution<int32_t> dist(0, (1 << 20) - 1);
  for (int32_t &v : x)
    v = dist(rng);
  std::vector<int32_t> hist(16, 0);
  std::vector<float> mx(16, -1.0f), sum(16, 0.0f);
  for (int32_t v : x) {
    hist[v & 15]++;
    mx[v & 15] = std::max(mx[v & 15], static_cast<float>(v >> 4));
    sum[v & 15] += 0.5f; // exact: at most 256 halves per block and bin, sums far below 2^24
  }
  DeviceBuffer dx = upload(x);
  DeviceBuffer dh = poisoned(16 * 4 + kSlackBytes), dm = poisoned(16 * 4 + kSlackBytes),
               ds = poisoned(16 * 4 + kSlackBytes);
  std::vector<float> minusOne(16, -1.0f);
  CK(cuMemsetD8(dh, 0, 16 * 4));
  CK(cuMemcpyHtoD(dm, minusOne.data(), 16 * 4));
  CK(cuMemsetD8(ds, 0, 16 * 4));
  CK(tile::shared_atomics::shared_atomics(nullptr, dx, dh, dm, ds, N));
  CK(cuCtxSynchronize());
  std::vector<int32_t> gotH = download<int32_t>(dh, 16);
  std::vector<float> gotM = download<float>(dm, 16), gotS = download<float>(ds, 16);
  int wrong = 0;
  for (int b = 0; b < 16; ++b) {
    wrong += gotH[b] != hist[b];
    wrong += std::memcmp(&gotM[b], &mx[b], 4) != 0;
    wrong += std::memcmp(&gotS[b], &sum[b], 4) != 0;
  }
  bool tails = tailIntact(dh, 64) && tailIntact(dm, 64) && tailIntact(ds, 64);
  std::printf("N=%lld: 16 bins, %d wrong values%s (bin 0: count %d/%d, max %g/%g, sum %g/%g) %s\n",
              static_cast<long long>(N), wrong, tails ? "" : " (wrote past the end)", gotH[0],
              hist[0], gotM[0], mx[0], gotS[0], sum[0], wrong == 0 && tails ? "PASS" : "FAIL");
  int failures = wrong != 0 || !tails;
  failures += checkTileAtomics(rng);
  failures += checkRegionAtomics(rng);
  return verdict("shared_atomics", failures);
}
