// Shared helpers of the GPU test programs: driver setup, checked calls, event timing.
// These programs run on the lent GPU machine; they are built by scripts/gpu-test.sh.
#pragma once

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace gputest {

inline void check(CUresult r, const char *what, int line) {
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr;
    cuGetErrorName(r, &name);
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

/// Median milliseconds of `reps` timed runs of `fn` after `warmup` untimed ones.
inline double medianMs(const std::function<void()> &fn, int warmup = 10, int reps = 50) {
  for (int i = 0; i < warmup; ++i)
    fn();
  CK(cuCtxSynchronize());
  CUevent a, b;
  CK(cuEventCreate(&a, CU_EVENT_DEFAULT));
  CK(cuEventCreate(&b, CU_EVENT_DEFAULT));
  std::vector<float> ms;
  for (int i = 0; i < reps; ++i) {
    CK(cuEventRecord(a, nullptr));
    fn();
    CK(cuEventRecord(b, nullptr));
    CK(cuEventSynchronize(b));
    float t = 0;
    CK(cuEventElapsedTime(&t, a, b));
    ms.push_back(t);
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
  uint32_t x = exp == 31 ? (sign | 0x7f800000u | (man << 13))
                         : (sign | ((exp + 112u) << 23) | (man << 13));
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
  CUdeviceptr src, dst;
  CK(cuMemAlloc(&src, bytes));
  CK(cuMemAlloc(&dst, bytes));
  CK(cuMemsetD8(src, 1, bytes));
  double ms = medianMs([&] { CK(cuMemcpyDtoDAsync(dst, src, bytes, nullptr)); });
  CK(cuMemFree(src));
  CK(cuMemFree(dst));
  return 2.0 * bytes / ms / 1e6;
}

} // namespace gputest
