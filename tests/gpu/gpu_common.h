// Shared helpers of the GPU test programs: driver setup, checked calls, event timing.
// These programs run on the lent GPU machine; they are built by scripts/gpu-test.sh.
#pragma once

#include <cuda.h>

#include <algorithm>
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

} // namespace gputest
