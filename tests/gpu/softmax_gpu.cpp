// softmax (samples/softmax.tile: rows of N = 1024 float16, M rows) through its generated header:
// error against a float64 CPU reference on fresh random inputs with a poisoned output, at ragged
// and large M, and bandwidth next to a device-to-device copy measured in the same run.
#include "gpu_common.h"
#ifndef TILEC_GPU_TEST_HIP
#include "sm_80/softmax.h"
#endif
#include "softmax.h"

using namespace gputest;

using SoftmaxFn = CUresult (*)(CUstream, LaunchPtr, LaunchPtr, int64_t);

int run(const char *arch, SoftmaxFn fn);

int main() {
  init();
  int failures = run(kMainArch, tile::softmax::softmax);
#ifndef TILEC_GPU_TEST_HIP
  failures += run("sm_80", tile::sm80::softmax::softmax);
#endif
  return verdict("softmax", failures);
}

int run(const char *arch, SoftmaxFn fn) {
  const int64_t N = 1024;
  std::mt19937 rng = freshRng();
  return halfRowsTable(
      "softmax", arch, "N", N, 3.f, rng,
      {int64_t{1}, int64_t{1001}, int64_t{4099}, int64_t{1} << 16},
      [&](CUdeviceptr x, CUdeviceptr y, int64_t M) {
        return fn(nullptr, launchPtr(x), launchPtr(y), M);
      },
      [&](const std::vector<uint16_t> &x, int64_t M) {
        std::vector<double> ref(x.size());
        for (int64_t r = 0; r < M; ++r) {
          double mx = -1e300, sum = 0;
          for (int64_t c = 0; c < N; ++c)
            mx = std::max(mx, static_cast<double>(fromHalf(x[r * N + c])));
          for (int64_t c = 0; c < N; ++c)
            sum += std::exp(fromHalf(x[r * N + c]) - mx);
          for (int64_t c = 0; c < N; ++c)
            ref[r * N + c] = std::exp(fromHalf(x[r * N + c]) - mx) / sum;
        }
        return ref;
      });
}
