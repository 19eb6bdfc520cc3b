// Host cost of a launch through a generated header whose kernel loads tiles by TMA (gemm_relu on
// sm_90a: two tensor maps encoded by cuTensorMapEncodeTiled) next to one without tensor maps
// (vector_add), on a 128x128x64 problem: the wall time of the launch call alone (kernels queue
// behind each other; the stream is synchronized only between batches), with the maps found in
// the launch site's cache (same pointers every launch) and re-encoded (two sets of pointers in
// alternation, so every launch encodes both maps again).
#include "gpu_common.h"
#include "sm_90a/gemm_relu.h"
#include "vector_add.h"

#include <chrono>

using namespace gputest;

namespace {

/// Median over batches of the microseconds one call of `launch` takes on the host.
double hostMicros(const std::function<void(int)> &launch) {
  constexpr int kBatch = 200, kBatches = 15;
  std::vector<double> us;
  for (int b = 0; b < kBatches + 2; ++b) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kBatch; ++i)
      launch(i);
    std::chrono::duration<double, std::micro> d = std::chrono::steady_clock::now() - start;
    CK(cuCtxSynchronize());
    if (b >= 2) // the first batches load the module and warm the caches
      us.push_back(d.count() / kBatch);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

} // namespace

int main() {
  init();
  const int64_t M = 128, N = 128, K = 64;
  DeviceBuffer a0(M * K * 2), b0(K * N * 2), c0(M * N * 2), a1(M * K * 2), b1(K * N * 2),
      c1(M * N * 2);
  CK(cuMemsetD8(a0, 0, M * K * 2));
  CK(cuMemsetD8(b0, 0, K * N * 2));
  CK(cuMemsetD8(a1, 0, M * K * 2));
  CK(cuMemsetD8(b1, 0, K * N * 2));
  DeviceBuffer x(M * N * 4), y(M * N * 4), z(M * N * 4);
  double plain =
      hostMicros([&](int) { CK(tile::vector_add::vector_add(nullptr, x, y, z, M * N)); });
  double cached =
      hostMicros([&](int) { CK(tile::gemm_relu::matmul_relu(nullptr, a0, b0, c0, M, K, N)); });
  double encoded = hostMicros([&](int i) {
    CK(i % 2 ? tile::gemm_relu::matmul_relu(nullptr, a1, b1, c1, M, K, N)
             : tile::gemm_relu::matmul_relu(nullptr, a0, b0, c0, M, K, N));
  });
  std::printf("launch host time (median us per call): vector_add %.2f, gemm_relu maps cached "
              "%.2f, gemm_relu maps re-encoded %.2f\n",
              plain, cached, encoded);
  std::printf("RESULT launch_overhead: encoding two tensor maps costs %.2f us a launch; with the "
              "maps cached a TMA launch costs %.2f us more than vector_add's\n",
              encoded - cached, cached - plain);
  bool ok = cached > 0 && encoded > 0;
  return verdict("launch_overhead", ok ? 0 : 1);
}
