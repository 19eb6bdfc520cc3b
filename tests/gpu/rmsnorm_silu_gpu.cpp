// rmsnorm_silu (samples/rmsnorm_silu.tile: Y = silu(X * rsqrt(mean(X^2) + eps) * W), D = 640
// float16) through its generated header: error against a float64 CPU reference on fresh random
// inputs with a poisoned output, ragged and large M, bandwidth next to a d2d copy.
#include "gpu_common.h"
#include "rmsnorm_silu.h"
#include "sm_80/rmsnorm_silu.h"

using namespace gputest;

using RmsFn = CUresult (*)(CUstream, CUdeviceptr, CUdeviceptr, CUdeviceptr, float, int64_t);

int run(const char *arch, RmsFn fn);

int main() {
  init();
  int failures = run("sm_90a", tile::rmsnorm_silu::rmsnorm_silu);
  failures += run("sm_80", tile::sm80::rmsnorm_silu::rmsnorm_silu);
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
      [&](CUdeviceptr x, CUdeviceptr y, int64_t M) { return fn(nullptr, x, dw, y, eps, M); },
      [&](const std::vector<uint16_t> &x, int64_t M) {
        std::vector<double> ref(x.size());
        for (int64_t r = 0; r < M; ++r) {
          double ms = 0;
          for (int64_t c = 0; c < D; ++c) {
            double v = fromHalf(x[r * D + c]);
            ms += v * v;
          }
          double inv = 1.0 / std::sqrt(ms / D + eps);
          for (int64_t c = 0; c < D; ++c) {
            double t = fromHalf(x[r * D + c]) * inv * fromHalf(w[c]);
            ref[r * D + c] = t / (1.0 + std::exp(-t));
          }
        }
        return ref;
      });
}
