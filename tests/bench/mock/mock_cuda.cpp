// A stand-in libcuda.so.1 for testing the benchmark's host program without a GPU
// (tests/bench/host-test.sh): device memory is host memory, events read the host clock, and
// the "kernel" is the C++ function of mock_kernel.h. Only what gemm_bench.cpp calls is here.
#include <cuda.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace {
double nowMs() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}
} // namespace

extern "C" {
CUresult cuInit(unsigned) {
  return std::getenv("MOCK_NO_DEVICE") ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *d, int) {
  *d = 0;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice) {
  *c = nullptr;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext) { return CUDA_SUCCESS; }
CUresult cuCtxSynchronize() { return CUDA_SUCCESS; }
CUresult cuDeviceGetName(char *name, int len, CUdevice) {
  std::strncpy(name, "mock device (host memory)", len);
  return CUDA_SUCCESS;
}
CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_MOCK";
  return CUDA_SUCCESS;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  *p = reinterpret_cast<CUdeviceptr>(std::malloc(bytes));
  return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  std::free(reinterpret_cast<void *>(p));
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) {
  std::memcpy(reinterpret_cast<void *>(d), s, n);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) {
  std::memcpy(d, reinterpret_cast<const void *>(s), n);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  std::memset(reinterpret_cast<void *>(d), v, n);
  return CUDA_SUCCESS;
}
CUresult cuEventCreate(CUevent *e, unsigned) {
  *e = reinterpret_cast<CUevent>(new double(0));
  return CUDA_SUCCESS;
}
CUresult cuEventDestroy_v2(CUevent e) {
  delete reinterpret_cast<double *>(e);
  return CUDA_SUCCESS;
}
CUresult cuEventRecord(CUevent e, CUstream) {
  *reinterpret_cast<double *>(e) = nowMs();
  return CUDA_SUCCESS;
}
CUresult cuEventSynchronize(CUevent) { return CUDA_SUCCESS; }
CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
  *ms = static_cast<float>(*reinterpret_cast<double *>(b) - *reinterpret_cast<double *>(a));
  return CUDA_SUCCESS;
}
}
