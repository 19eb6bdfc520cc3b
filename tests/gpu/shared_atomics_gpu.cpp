// Atomics into shared memory (tests/gpu/kernels/shared_atomics.tile) against the CPU, exactly:
// per-block histograms of 16 bins (int32 adds), maxima (float32, a compare-and-swap loop) and
// sums of halves (float16 adds) in shared memory, then added into global totals. A ragged
// element count, fresh random inputs, and poisoned bytes behind every output.
#include "gpu_common.h"
#include "shared_atomics.h"

#include <cstring>

using namespace gputest;

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
  return verdict("shared_atomics", wrong != 0 || !tails);
}
