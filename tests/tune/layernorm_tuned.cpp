// The header `tilec tune` wrote for samples/layernorm.tile (scripts/tune-gpu.sh builds this on
// the GPU machine against it): correct against a float64 reference at ragged and tuned row
// counts (fresh random inputs, poisoned output with slack behind it), and timed through the
// header's dispatching launch function the way `tilec bench` times (events around each launch,
// the L2 flushed before each, no host synchronization between launches), next to a device copy
// timed the same way.
#include "gpu_common.h"
#include "layernorm.h"

#include <algorithm>

using namespace gputest;

namespace {

constexpr int64_t D = 768;
constexpr float kEps = 1e-5f;

std::vector<double> reference(const std::vector<uint16_t> &x, const std::vector<uint16_t> &g,
                              const std::vector<uint16_t> &b, int64_t M) {
  std::vector<double> y(x.size());
  for (int64_t i = 0; i < M; ++i) {
    double mean = 0, var = 0;
    for (int64_t j = 0; j < D; ++j)
      mean += fromBf16(x[i * D + j]);
    mean /= D;
    for (int64_t j = 0; j < D; ++j) {
      double t = fromBf16(x[i * D + j]) - mean;
      var += t * t;
    }
    var /= D;
    for (int64_t j = 0; j < D; ++j)
      y[i * D + j] =
          (fromBf16(x[i * D + j]) - mean) / std::sqrt(var + kEps) * fromBf16(g[j]) + fromBf16(b[j]);
  }
  return y;
}

/// Median microseconds of `fn` as tilec bench times a launch.
template <class F> double benchUs(F fn, int reps = 100) {
  CUdevice dev;
  CK(cuCtxGetDevice(&dev));
  int l2 = 0;
  CK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
  DeviceBuffer flush(2 * static_cast<size_t>(l2));
  for (int i = 0; i < 10; ++i)
    fn();
  std::vector<CUevent> ev(2 * reps);
  for (CUevent &e : ev)
    CK(cuEventCreate(&e, CU_EVENT_DEFAULT));
  for (int r = 0; r < reps; ++r) {
    CK(cuMemsetD32Async(flush, static_cast<unsigned>(r), l2 / 2, nullptr));
    CK(cuEventRecord(ev[2 * r], nullptr));
    fn();
    CK(cuEventRecord(ev[2 * r + 1], nullptr));
  }
  CK(cuCtxSynchronize());
  std::vector<double> us;
  for (int r = 0; r < reps; ++r) {
    float ms = 0;
    CK(cuEventElapsedTime(&ms, ev[2 * r], ev[2 * r + 1]));
    us.push_back(ms * 1000.0);
  }
  for (CUevent e : ev)
    CK(cuEventDestroy(e));
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

} // namespace

int main() {
  init();
  std::mt19937 rng = freshRng();
  std::vector<uint16_t> g = randomBf16s(D, rng), b = randomBf16s(D, rng);
  DeviceBuffer dg = upload(g), db = upload(b);
  int failures = 0;
  std::printf("%-8s %-8s %-10s %-6s %10s %10s %10s\n", "M", "variant", "rel.err", "nan", "us",
              "GB/s", "copy GB/s");
  for (int64_t M : {int64_t{1}, int64_t{1003}, int64_t{65536}}) {
    size_t n = static_cast<size_t>(M * D), bytes = n * 2;
    std::vector<uint16_t> x = randomBf16s(n, rng);
    DeviceBuffer dx = upload(x), dy = poisoned(bytes + kSlackBytes);
    auto launch = [&] { CK(tile::layernorm::layernorm(nullptr, dx, dg, db, dy, kEps, M)); };
    launch();
    CK(cuCtxSynchronize());
    std::vector<uint16_t> raw = download<uint16_t>(dy, n);
    std::vector<float> out(n);
    std::transform(raw.begin(), raw.end(), out.begin(), fromBf16);
    bool tailOk = tailIntact(dy, bytes);
    ErrorStats e = relError(out, reference(x, g, b, M));
    bool ok = e.nan == 0 && e.rel < 1e-2 && tailOk; // bf16 output: 8 bits of mantissa
    failures += !ok;
    double us = benchUs(launch);
    DeviceBuffer src(bytes), dst(bytes);
    CK(cuMemsetD8(src, 1, bytes));
    double copyUs = benchUs([&] { CK(cuMemcpyDtoDAsync(dst, src, bytes, nullptr)); });
    double gbs = 2.0 * bytes / us / 1e3, copy = 2.0 * bytes / copyUs / 1e3;
    std::printf("%-8lld %-8d %-10.2e %-6lld %10.2f %10.1f %10.1f %s\n", static_cast<long long>(M),
                tile::layernorm::layernorm_variant(M), e.rel, e.nan, us, gbs, copy,
                ok ? "ok" : "FAIL");
    if (M == 65536)
      std::printf("RESULT layernorm (tuned header) M=65536 D=768 bf16: %.1f GB/s = %.1f%% of d2d "
                  "copy %.1f GB/s\n",
                  gbs, 100 * gbs / copy, copy);
  }
  return verdict("layernorm_tuned", failures);
}
