// rmsnorm_silu (samples/rmsnorm_silu.tile: Y = silu(X * rsqrt(mean(X^2) + eps) * W), D = 640
// float16) through its generated header: error against a float64 CPU reference on fresh random
// inputs with a poisoned output, ragged and large M, bandwidth next to a d2d copy.
#include "gpu_common.h"
#include "rmsnorm_silu.h"
#ifndef TILEC_GPU_TEST_HIP
#include "sm_80/rmsnorm_silu.h"
#endif

using namespace gputest;

using RmsFn = CUresult (*)(CUstream, LaunchPtr, LaunchPtr, LaunchPtr, float, int64_t);

int run(const char *arch, RmsFn fn);

int main() {
  init();
  int failures = run(kMainArch, tile::rmsnorm_silu::rmsnorm_silu);
#ifndef TILEC_GPU_TEST_HIP
  failures += run("sm_80", tile::sm80::rmsnorm_silu::rmsnorm_silu);
#endif
  return verdict("rmsnorm_silu", failures);
}

int run(const char *arch, RmsFn fn) {
  const int64_t D = 640;
  const float eps = 1e-6f;
  std::mt19937 rng = freshRng();
  std::vector<uint16_t> w = randomHalves(D, rng);
  DeviceBuffer dw = upload(w);
  return halfRowsTable(
      "rmsnorm_silu", arch, "D", D, 1.f, rng, {int64_t{1}, int64_t{1003}, int64_t{1} << 16},
      [&](CUdeviceptr x, CUdeviceptr y, int64_t M) {
        return fn(nullptr, launchPtr(x), dw, launchPtr(y), eps, M);
      },
      [&](const std::vector<uint16_t> &x, int64_t M) {
        return rmsnormSiluReference(x, w, M, D, eps);
      });
}
