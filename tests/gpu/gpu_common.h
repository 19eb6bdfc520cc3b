// Shared helpers of the GPU test programs: driver setup, checked calls, device buffers,
// random inputs, poisoned outputs, event timing and error measures.
// These programs run on the lent GPU machine; they are built by scripts/gpu-test.sh.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <random>
#include <utility>
#include <vector>

#include "w4_packing.h"

namespace gputest {

#ifdef TILEC_GPU_TEST_HIP
/// What the generated launch functions take for a tensor: HIP's pointer (tests/gpu/hip/cuda.h
/// builds these programs for AMD GPUs), or CUDA's integer address.
using LaunchPtr = hipDeviceptr_t;
inline LaunchPtr launchPtr(CUdeviceptr p) { return tilecHipPtr(p); }
/// The target the programs' main kernels are compiled for.
inline constexpr const char *kMainArch = "gfx942";
#else
using LaunchPtr = CUdeviceptr;
inline LaunchPtr launchPtr(CUdeviceptr p) { return p; }
inline constexpr const char *kMainArch = "sm_90a";
#endif

inline void check(CUresult r, const char *what, int line) {
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr;
    (void)cuGetErrorName(r, &name);
    std::fprintf(stderr, "FAIL: %s returned %s (line %d)\n", what, name ? name : "?", line);
    std::exit(2);
  }
}
#define CK(call) ::gputest::check((call), #call, __LINE__)

inline CUcontext init() {
  CK(cuInit(0));
  CUdevice dev;
  CK(cuDeviceGet(&dev, 0));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  char name[256];
  CK(cuDeviceGetName(name, sizeof name, dev));
  std::printf("device: %s\n", name);
  return ctx;
}

/// Whether the case `name` runs: all of them, or with TILEC_GPU_ONLY set only those whose name
/// contains it (to time a few cases without the others' CPU references).
inline bool selected(const char *name) {
  const char *only = std::getenv("TILEC_GPU_ONLY");
  return !only || std::strstr(name, only) != nullptr;
}

/// A random generator seeded afresh each run, so that repeated runs cover other inputs.
inline std::mt19937 freshRng() { return std::mt19937(std::random_device{}()); }

/// A device allocation, freed when it goes out of scope; it converts to its CUdeviceptr so that
/// it can be passed to the generated launchers as is.
class DeviceBuffer {
public:
  explicit DeviceBuffer(size_t bytes) { CK(cuMemAlloc(&ptr_, bytes)); }
  DeviceBuffer(DeviceBuffer &&other) noexcept : ptr_(std::exchange(other.ptr_, 0)) {}
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(DeviceBuffer &&) = delete;
  ~DeviceBuffer() {
    if (ptr_)
      CK(cuMemFree(ptr_));
  }
  operator CUdeviceptr() const { return ptr_; }
#ifdef TILEC_GPU_TEST_HIP
  // The HIP launch headers take HIP's pointer type (tests/gpu/hip/cuda.h).
  operator hipDeviceptr_t() const { return tilecHipPtr(ptr_); }
#endif

private:
  CUdeviceptr ptr_ = 0;
};

template <class T> DeviceBuffer upload(const std::vector<T> &v) {
  DeviceBuffer d(v.size() * sizeof(T));
  CK(cuMemcpyHtoD(d, v.data(), v.size() * sizeof(T)));
  return d;
}

template <class T> std::vector<T> download(CUdeviceptr p, size_t n) {
  std::vector<T> v(n);
  CK(cuMemcpyDtoH(v.data(), p, n * sizeof(T)));
  return v;
}

/// A buffer of 0xFF bytes, which read as NaN in float32, float16 and bfloat16: an output
/// element the kernel never writes shows up as NaN.
inline DeviceBuffer poisoned(size_t bytes) {
  DeviceBuffer d(bytes);
  CK(cuMemsetD8(d, 0xFF, bytes));
  return d;
}

/// `n` float32 quiet NaNs, the poison of float outputs.
inline DeviceBuffer nanFloats(size_t n) {
  DeviceBuffer d(n * 4);
  CK(cuMemsetD32(d, 0x7fc00000u, n));
  return d;
}

/// Poisoned bytes allocated past an output: a store past its end changes them.
constexpr size_t kSlackBytes = 256;

/// Whether the `slack` poisoned bytes after the first `bytes` of `p` are untouched.
inline bool tailIntact(CUdeviceptr p, size_t bytes, size_t slack = kSlackBytes) {
  std::vector<unsigned char> tail = download<unsigned char>(p + bytes, slack);
  return std::all_of(tail.begin(), tail.end(), [](unsigned char b) { return b == 0xFF; });
}

/// Median milliseconds of `reps` timed runs of `fn` after `warmup` untimed ones. Each timed run
/// is `batch` calls back to back between the two events, waited for together, and counts their
/// mean: with batch 1 a short kernel's time includes the host's launch latency (the device is
/// idle when the first event is recorded), with more the launches queue behind each other as an
/// engine's stream or graph launches them.
inline double medianMs(const std::function<void()> &fn, int warmup = 10, int reps = 50,
                       int batch = 1) {
  for (int i = 0; i < warmup; ++i)
    fn();
  CK(cuCtxSynchronize());
  CUevent a, b;
  CK(cuEventCreate(&a, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&b, CU_EVENT_DEFAULT));
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    CK(cuEventRecord(a, nullptr));
    for (int j = 0; j < batch; ++j)
      fn();
    CK(cuEventRecord(b, nullptr));
    CK(cuEventSynchronize(b));
    float t = 0;
    CK(cuEventElapsedTime(&t, a, b));
    ms.push_back(t / static_cast<float>(batch));
  }
  CK(cuEventDestroy(a));
  CK(cuEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

/// IEEE binary16 <-> float, round to nearest even (host side of float16 tensors).
inline uint16_t toHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u, mag = x & 0x7fffffffu;
  if (mag >= 0x7f800000u) // inf or NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (mag > 0x7f800000u ? 0x200u : 0));
  if (mag >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (mag < 0x38800000u) { // subnormal or zero in half
    float a;
    uint32_t m = mag;
    std::memcpy(&a, &m, 4);
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t h = ((mag - 0x38000000u) >> 13);
  uint32_t rest = mag & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float fromHalf(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  float f;
  if (exp == 0) {
    f = std::ldexp(static_cast<float>(man), -24);
    return sign ? -f : f;
  }
  uint32_t x =
      exp == 31 ? (sign | 0x7f800000u | (man << 13)) : (sign | ((exp + 112u) << 23) | (man << 13));
  std::memcpy(&f, &x, 4);
  return f;
}

/// bfloat16 <-> float (round to nearest even).
inline uint16_t toBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}
inline float fromBf16(uint16_t h) {
  uint32_t x = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// float8 (e4m3 when `e4m3`, else e5m2) -> float: exact. e4m3 has no infinities and NaN at
/// S.1111.111; e5m2 follows IEEE (S.11111.00 is infinity).
inline float fromFp8(uint8_t b, bool e4m3) {
  int mantBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  int exp = (b & 0x7F) >> mantBits, mant = b & ((1 << mantBits) - 1);
  float sign = (b & 0x80) ? -1.f : 1.f;
  if ((e4m3 && (b & 0x7F) == 0x7F) || (!e4m3 && exp == 31 && mant != 0))
    return NAN;
  if (!e4m3 && exp == 31)
    return sign * INFINITY;
  if (exp == 0)
    return sign * std::ldexp(static_cast<float>(mant), 1 - bias - mantBits);
  return sign * std::ldexp(static_cast<float>((1 << mantBits) + mant), exp - bias - mantBits);
}

/// double -> float8 as PTX's cvt.rn.satfinite: nearest, ties to the even encoding, beyond the
/// largest finite value (infinities too) to it, NaN to NaN.
inline uint8_t toFp8(double v, bool e4m3) {
  if (std::isnan(v))
    return 0x7F;
  uint8_t sign = std::signbit(v) ? 0x80 : 0, maxFinite = e4m3 ? 0x7E : 0x7B;
  double mag = std::fabs(v);
  if (mag >= fromFp8(maxFinite, e4m3))
    return sign | maxFinite;
  // Finite non-negative encodings increase with their value: find the two neighbours.
  uint8_t lo = 0;
  while (fromFp8(static_cast<uint8_t>(lo + 1), e4m3) <= mag)
    ++lo;
  double below = fromFp8(lo, e4m3), above = fromFp8(static_cast<uint8_t>(lo + 1), e4m3);
  bool up = mag - below > above - mag || (mag - below == above - mag && (lo & 1));
  return sign | static_cast<uint8_t>(lo + up);
}

/// `n` draws from N(0, sd^2), stored through `convert`.
template <class T, class Convert>
std::vector<T> randomNormal(size_t n, std::mt19937 &rng, float sd, Convert convert) {
  std::normal_distribution<float> dist(0.f, sd);
  std::vector<T> v(n);
  for (T &x : v)
    x = convert(dist(rng));
  return v;
}
inline std::vector<float> randomFloats(size_t n, std::mt19937 &rng, float sd = 1.f) {
  return randomNormal<float>(n, rng, sd, [](float x) { return x; });
}
inline std::vector<uint16_t> randomHalves(size_t n, std::mt19937 &rng, float sd = 1.f) {
  return randomNormal<uint16_t>(n, rng, sd, toHalf);
}
inline std::vector<uint16_t> randomBf16s(size_t n, std::mt19937 &rng, float sd = 1.f) {
  return randomNormal<uint16_t>(n, rng, sd, toBf16);
}

/// `n` float8 values rounded from N(0, sd^2) draws.
inline std::vector<uint8_t> randomFp8(size_t n, std::mt19937 &rng, bool e4m3, float sd = 1.f) {
  return randomNormal<uint8_t>(n, rng, sd, [&](float x) { return toFp8(x, e4m3); });
}

inline std::vector<float> halvesToFloats(const std::vector<uint16_t> &v) {
  std::vector<float> f(v.size());
  std::transform(v.begin(), v.end(), f.begin(), fromHalf);
  return f;
}

/// How many of the 16-bit values `v` (read by `toFloat`: fromHalf, fromBf16) are NaN.
inline long long countNaN(const std::vector<uint16_t> &v, float (*toFloat)(uint16_t)) {
  return std::count_if(v.begin(), v.end(), [&](uint16_t x) { return std::isnan(toFloat(x)); });
}

/// ||out - ref|| / ||ref||, and whether any output is NaN (poison left or a bad value).
struct ErrorStats {
  double rel = 0;
  long long nan = 0;
};
inline ErrorStats relError(const std::vector<float> &out, const std::vector<double> &ref) {
  ErrorStats s;
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::isnan(out[i])) {
      ++s.nan;
      continue;
    }
    double d = out[i] - ref[i];
    num += d * d;
    den += ref[i] * ref[i];
  }
  s.rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return s;
}

/// Bytes/ms of a device-to-device copy of `bytes` bytes (read + written), for the ceiling.
inline double copyGBs(size_t bytes) {
  DeviceBuffer src(bytes), dst(bytes);
  CK(cuMemsetD8(src, 1, bytes));
  double ms = medianMs([&] { CK(cuMemcpyDtoDAsync(dst, src, bytes, nullptr)); });
  return 2.0 * bytes / ms / 1e6;
}

/// Checks and times a kernel from rows of `cols` float16 values to as many, for each row count
/// M in `rowCounts`: `launch(x, y, M)` on a fresh N(0, sd^2) input and a poisoned output with
/// slack behind it, the error against `reference(x, M)` (row-major float64, relative error under
/// 2e-3), and the bandwidth next to a device-to-device copy of as many bytes. Prints a table and,
/// for the last (largest) M, a RESULT line; returns the failures.
template <class Launch, class Reference>
int halfRowsTable(const char *kernel, const char *arch, const char *colsName, int64_t cols,
                  float sd, std::mt19937 &rng, std::initializer_list<int64_t> rowCounts,
                  Launch launch, Reference reference) {
  std::printf("-- %s --arch %s\n", kernel, arch);
  std::printf("%-8s %-10s %-6s %10s %10s %10s\n", "M", "rel.err", "nan", "ms", "GB/s", "copy GB/s");
  int failures = 0;
  for (int64_t M : rowCounts) {
    size_t n = static_cast<size_t>(M * cols), bytes = n * 2;
    std::vector<uint16_t> x = randomHalves(n, rng, sd);
    DeviceBuffer dx = upload(x), dy = poisoned(bytes + kSlackBytes);
    CK(launch(dx, dy, M));
    CK(cuCtxSynchronize());
    std::vector<float> out = halvesToFloats(download<uint16_t>(dy, n));
    bool tailOk = tailIntact(dy, bytes);
    ErrorStats e = relError(out, reference(x, M));
    bool ok = e.nan == 0 && e.rel < 2e-3 && tailOk;
    failures += !ok;
    double ms = medianMs([&] { CK(launch(dx, dy, M)); });
    double gbs = 2.0 * bytes / ms / 1e6;
    double copy = copyGBs(bytes);
    std::printf("%-8lld %-10.2e %-6lld %10.4f %10.1f %10.1f %s%s\n", static_cast<long long>(M),
                e.rel, e.nan, ms, gbs, copy, ok ? "ok" : "FAIL", tailOk ? "" : " (wrote past end)");
    if (M == *(rowCounts.end() - 1))
      std::printf("RESULT %s %s M=%lld %s=%lld fp16: %.1f GB/s = %.1f%% of d2d copy %.1f GB/s\n",
                  kernel, arch, static_cast<long long>(M), colsName, static_cast<long long>(cols),
                  gbs, 100 * gbs / copy, copy);
  }
  return failures;
}

/// Y = silu(X * rsqrt(mean(X^2) + eps) * W) for M rows of `cols` float16 values, in float64.
inline std::vector<double> rmsnormSiluReference(const std::vector<uint16_t> &x,
                                                const std::vector<uint16_t> &w, int64_t M,
                                                int64_t cols, double eps) {
  std::vector<double> ref(x.size());
  for (int64_t r = 0; r < M; ++r) {
    double ms = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double v = fromHalf(x[r * cols + c]);
      ms += v * v;
    }
    double inv = 1.0 / std::sqrt(ms / cols + eps);
    for (int64_t c = 0; c < cols; ++c) {
      double t = fromHalf(x[r * cols + c]) * inv * fromHalf(w[c]);
      ref[r * cols + c] = t / (1.0 + std::exp(-t));
    }
  }
  return ref;
}

/// The widths the two-pass RMSNorm+SiLU tests run (issue 9's 160, 320 and 640, and 40 and 1000,
/// whose last chunk is partly outside), each with fresh float16 weights on the device:
/// `check(C, W, reference)` checks one width and returns its failures.
template <class Check> int rmsnormSiluWidths(std::mt19937 &rng, float eps, Check check) {
  int failures = 0;
  for (int64_t C : {int64_t{40}, int64_t{160}, int64_t{320}, int64_t{640}, int64_t{1000}}) {
    std::vector<uint16_t> w = randomHalves(static_cast<size_t>(C), rng);
    DeviceBuffer dw = upload(w);
    auto reference = [&](const std::vector<uint16_t> &x, int64_t M) {
      return rmsnormSiluReference(x, w, M, C, eps);
    };
    failures += check(C, static_cast<CUdeviceptr>(dw), reference);
  }
  return failures;
}

/// Appends the time and the arithmetic rate of `flop` operations in `ms` to a result line.
inline void printTflops(double ms, double flop) {
  std::printf("  %.3f ms  %.1f TFLOP/s", ms, flop / ms / 1e9);
}

/// Compares `want.size()` values at `d` with `want` bit for bit and checks the poisoned bytes
/// behind them; prints one line (the first mismatch's bits in hex) and returns 1 on failure.
template <class T> int compareExact(const char *what, CUdeviceptr d, const std::vector<T> &want) {
  std::vector<T> got = download<T>(d, want.size());
  size_t wrong = 0, first = want.size();
  for (size_t j = 0; j < want.size(); ++j)
    if (std::memcmp(&got[j], &want[j], sizeof(T)) != 0) {
      wrong++;
      first = std::min(first, j);
    }
  bool tail = tailIntact(d, want.size() * sizeof(T));
  bool ok = wrong == 0 && tail;
  std::printf("%-6s %zu values, %zu wrong%s", what, want.size(), wrong,
              tail ? "" : " (wrote past the end)");
  if (wrong) {
    uint64_t g = 0, w = 0;
    std::memcpy(&g, &got[first], sizeof(T));
    std::memcpy(&w, &want[first], sizeof(T));
    std::printf(" (first at %zu: got 0x%llx, want 0x%llx)", first,
                static_cast<unsigned long long>(g), static_cast<unsigned long long>(w));
  }
  std::printf(" %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

/// Prints a test program's verdict line and returns its exit status.
inline int verdict(const char *test, int failures) {
  std::printf("%s: %s\n", test, failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}

} // namespace gputest
