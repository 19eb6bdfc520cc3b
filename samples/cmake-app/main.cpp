// The example application: Y = 2 * gelu(X) + X on the GPU through two generated headers, checked
// against the CPU.
#include "axpy.h"
#include "gelu.h"

#include <cuda.h>

#include <cmath>
#include <cstdio>
#include <vector>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    if (CUresult r = (call); r != CUDA_SUCCESS) {                                                  \
      std::fprintf(stderr, "%s failed (%d): %s\n", #call, static_cast<int>(r),                     \
                   tile::gelu::last_error());                                                      \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int main() {
  CHECK(cuInit(0));
  CUdevice device;
  CHECK(cuDeviceGet(&device, 0));
  CUcontext context;
  CHECK(cuDevicePrimaryCtxRetain(&context, device));
  CHECK(cuCtxSetCurrent(context));

  const int64_t n = 100000;
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = static_cast<float>(i % 200) / 50.0f - 2.0f;
  size_t bytes = n * sizeof(float);
  CUdeviceptr dx, dy;
  CHECK(cuMemAlloc(&dx, bytes));
  CHECK(cuMemAlloc(&dy, bytes));
  CHECK(cuMemcpyHtoD(dx, x.data(), bytes));
  CHECK(tile::gelu::gelu(nullptr, dx, dy, n));       // y = gelu(x)
  CHECK(tile::axpy::axpy(nullptr, 0.5f, dx, dy, n)); // y = 0.5 x + y
  CHECK(tile::axpy::axpy(nullptr, 0.5f, dx, dy, n)); // y = x + y
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(y.data(), dy, bytes));

  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    float g = 0.5f * x[i] * (1.0f + std::erf(x[i] * 0.7071067811865476f));
    if (std::fabs(y[i] - (g + x[i])) > 1e-5f * (1.0f + std::fabs(g + x[i])))
      ++bad;
  }
  std::printf("cmake_app: %lld elements, %lld wrong (gelu: %u threads a block)\n",
              static_cast<long long>(n), static_cast<long long>(bad),
              tile::gelu::gelu_info::threads_per_block);
  cuMemFree(dx);
  cuMemFree(dy);
  return bad == 0 ? 0 : 1;
}
