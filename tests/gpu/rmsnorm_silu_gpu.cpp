// rmsnorm_silu (samples/rmsnorm_silu.tile: Y = silu(X * rsqrt(mean(X^2) + eps) * W), D = 640
// float16) through its generated header: error against a float64 CPU reference on fresh random
// inputs with a poisoned output, ragged and large M, bandwidth next to a d2d copy.
#include "gpu_common.h"
#include "rmsnorm_silu.h"
#include "sm_80/rmsnorm_silu.h"

#include <random>

using namespace gputest;

using RmsFn = CUresult (*)(CUstream, CUdeviceptr, CUdeviceptr, CUdeviceptr, float, int64_t);

int run(const char *arch, RmsFn fn);

int main() {
  init();
  int failures = run("sm_90a", tile::rmsnorm_silu::rmsnorm_silu);
  failures += run("sm_80", tile::sm80::rmsnorm_silu::rmsnorm_silu);
  std::printf("rmsnorm_silu: %s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}

int run(const char *arch, RmsFn fn) {
  std::printf("-- rmsnorm_silu --arch %s\n", arch);
  std::random_device rd;
  std::mt19937 rng(rd());
  std::normal_distribution<float> dist(0.f, 1.f);
  const int64_t D = 640;
  const float eps = 1e-6f;
  int failures = 0;
  std::vector<uint16_t> w(D);
  for (auto &v : w)
    v = toHalf(dist(rng));
  CUdeviceptr dw;
  CK(cuMemAlloc(&dw, D * 2));
  CK(cuMemcpyHtoD(dw, w.data(), D * 2));
  std::printf("%-8s %-10s %-6s %10s %10s %10s\n", "M", "rel.err", "nan", "ms", "GB/s", "copy GB/s");
  for (int64_t M : {int64_t{1}, int64_t{1003}, int64_t{1} << 16}) {
    size_t n = static_cast<size_t>(M * D), bytes = n * 2;
    std::vector<uint16_t> x(n), y(n);
    for (auto &v : x)
      v = toHalf(dist(rng));
    CUdeviceptr dx, dy;
    CK(cuMemAlloc(&dx, bytes));
    CK(cuMemAlloc(&dy, bytes + 256));
    CK(cuMemcpyHtoD(dx, x.data(), bytes));
    CK(cuMemsetD8(dy, 0xFF, bytes + 256));
    CK(fn(nullptr, dx, dw, dy, eps, M));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(y.data(), dy, bytes));
    std::vector<unsigned char> tail(256);
    CK(cuMemcpyDtoH(tail.data(), dy + bytes, 256));
    std::vector<double> ref(n);
    std::vector<float> out(n);
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
    for (size_t i = 0; i < n; ++i)
      out[i] = fromHalf(y[i]);
    ErrorStats e = relError(out, ref);
    bool tailOk = std::all_of(tail.begin(), tail.end(), [](unsigned char b) { return b == 0xFF; });
    bool ok = e.nan == 0 && e.rel < 2e-3 && tailOk;
    failures += !ok;
    double ms = medianMs([&] { CK(fn(nullptr, dx, dw, dy, eps, M)); });
    double gbs = 2.0 * bytes / ms / 1e6;
    double copy = copyGBs(bytes);
    std::printf("%-8lld %-10.2e %-6lld %10.4f %10.1f %10.1f %s%s\n", static_cast<long long>(M),
                e.rel, e.nan, ms, gbs, copy, ok ? "ok" : "FAIL", tailOk ? "" : " (wrote past end)");
    if (M == (int64_t{1} << 16))
      std::printf("RESULT rmsnorm_silu %s M=65536 D=640 fp16: %.1f GB/s = %.1f%% of d2d copy "
                  "%.1f GB/s\n",
                  arch, gbs, 100 * gbs / copy, copy);
    CK(cuMemFree(dx));
    CK(cuMemFree(dy));
  }
  CK(cuMemFree(dw));
  return failures;
}
