// softmax (samples/softmax.tile: rows of N = 1024 float16, M rows) through its generated header:
// error against a float64 CPU reference on fresh random inputs with a poisoned output, at ragged
// and large M, and bandwidth next to a device-to-device copy measured in the same run.
#include "gpu_common.h"
#include "sm_80/softmax.h"
#include "softmax.h"

#include <random>

using namespace gputest;

using SoftmaxFn = CUresult (*)(CUstream, CUdeviceptr, CUdeviceptr, int64_t);

int run(const char *arch, SoftmaxFn fn);

int main() {
  init();
  int failures = run("sm_90a", tile::softmax::softmax);
  failures += run("sm_80", tile::sm80::softmax::softmax);
  std::printf("softmax: %s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}

int run(const char *arch, SoftmaxFn fn) {
  std::printf("-- softmax --arch %s\n", arch);
  std::random_device rd;
  std::mt19937 rng(rd());
  std::normal_distribution<float> dist(0.f, 3.f);
  const int64_t N = 1024;
  int failures = 0;
  std::printf("%-8s %-10s %-6s %10s %10s %10s\n", "M", "rel.err", "nan", "ms", "GB/s", "copy GB/s");
  for (int64_t M : {int64_t{1}, int64_t{1001}, int64_t{4099}, int64_t{1} << 16}) {
    size_t n = static_cast<size_t>(M * N), bytes = n * 2;
    std::vector<uint16_t> x(n), y(n);
    for (auto &v : x)
      v = toHalf(dist(rng));
    CUdeviceptr dx, dy;
    CK(cuMemAlloc(&dx, bytes));
    CK(cuMemAlloc(&dy, bytes + 256));
    CK(cuMemcpyHtoD(dx, x.data(), bytes));
    CK(cuMemsetD8(dy, 0xFF, bytes + 256));
    CK(fn(nullptr, dx, dy, M));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(y.data(), dy, bytes));
    std::vector<unsigned char> tail(256);
    CK(cuMemcpyDtoH(tail.data(), dy + bytes, 256));
    std::vector<double> ref(n);
    std::vector<float> out(n);
    for (int64_t r = 0; r < M; ++r) {
      double mx = -1e300, sum = 0;
      for (int64_t c = 0; c < N; ++c)
        mx = std::max(mx, static_cast<double>(fromHalf(x[r * N + c])));
      for (int64_t c = 0; c < N; ++c)
        sum += std::exp(fromHalf(x[r * N + c]) - mx);
      for (int64_t c = 0; c < N; ++c)
        ref[r * N + c] = std::exp(fromHalf(x[r * N + c]) - mx) / sum;
    }
    for (size_t i = 0; i < n; ++i)
      out[i] = fromHalf(y[i]);
    ErrorStats e = relError(out, ref);
    bool tailOk = std::all_of(tail.begin(), tail.end(), [](unsigned char b) { return b == 0xFF; });
    bool ok = e.nan == 0 && e.rel < 2e-3 && tailOk;
    failures += !ok;
    double ms = medianMs([&] { CK(fn(nullptr, dx, dy, M)); });
    double gbs = 2.0 * bytes / ms / 1e6;
    double copy = copyGBs(bytes);
    std::printf("%-8lld %-10.2e %-6lld %10.4f %10.1f %10.1f %s%s\n", static_cast<long long>(M),
                e.rel, e.nan, ms, gbs, copy, ok ? "ok" : "FAIL", tailOk ? "" : " (wrote past end)");
    if (M == (int64_t{1} << 16))
      std::printf(
          "RESULT softmax %s M=65536 N=1024 fp16: %.1f GB/s = %.1f%% of d2d copy %.1f GB/s\n", arch,
          gbs, 100 * gbs / copy, copy);
    CK(cuMemFree(dx));
    CK(cuMemFree(dy));
  }
  return failures;
}
