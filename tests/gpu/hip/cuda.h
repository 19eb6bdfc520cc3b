// The CUDA Driver API, as much of it as the GPU test programs call, over HIP: included in place
// of <cuda.h> when scripts/gpu-test-hip.sh builds those programs for an AMD GPU, so that the
// same test sources check the kernels of the HIP launch headers. Not a general port: a call the
// tests do not make is not here, and a build that needs one fails to compile.
#pragma once

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

#include <cstddef>

#define TILEC_GPU_TEST_HIP 1

using CUresult = hipError_t;
using CUdevice = hipDevice_t;
using CUstream = hipStream_t;
using CUevent = hipEvent_t;
/// A device address as the CUDA Driver API has it: an integer (HIP's is a pointer).
using CUdeviceptr = unsigned long long;
/// HIP has no contexts to speak of: the device is the context.
using CUcontext = hipDevice_t;

inline constexpr hipError_t CUDA_SUCCESS = hipSuccess;
inline constexpr hipError_t CUDA_ERROR_NO_BINARY_FOR_GPU = hipErrorNoBinaryForGpu;
inline constexpr unsigned CU_EVENT_DEFAULT = hipEventDefault;
inline constexpr unsigned CU_STREAM_NON_BLOCKING = hipStreamNonBlocking;
enum CUdevice_attribute {
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
};

inline hipDeviceptr_t tilecHipPtr(CUdeviceptr p) { return reinterpret_cast<hipDeviceptr_t>(p); }

inline CUresult cuInit(unsigned flags) { return hipInit(flags); }
inline CUresult cuGetErrorName(CUresult r, const char **name) {
  *name = hipGetErrorName(r);
  return hipSuccess;
}
inline CUresult cuDeviceGet(CUdevice *d, int ordinal) { return hipDeviceGet(d, ordinal); }
inline CUresult cuDeviceGetCount(int *n) { return hipGetDeviceCount(n); }
inline CUresult cuDeviceGetName(char *name, int len, CUdevice d) {
  return hipDeviceGetName(name, len, d);
}
inline CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  return hipDeviceGetAttribute(v,
                               a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
                                   ? hipDeviceAttributeComputeCapabilityMajor
                                   : hipDeviceAttributeComputeCapabilityMinor,
                               d);
}
inline CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  *c = d;
  return hipSuccess;
}
inline CUresult cuCtxSetCurrent(CUcontext c) { return hipSetDevice(c); }
inline CUresult cuCtxGetDevice(CUdevice *d) { return hipGetDevice(d); }
inline CUresult cuCtxSynchronize() { return hipDeviceSynchronize(); }

inline CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  void *q = nullptr;
  CUresult r = hipMalloc(&q, bytes);
  *p = reinterpret_cast<CUdeviceptr>(q);
  return r;
}
inline CUresult cuMemFree(CUdeviceptr p) { return hipFree(reinterpret_cast<void *>(p)); }
inline CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  return hipMemcpyHtoD(tilecHipPtr(dst), const_cast<void *>(src), bytes);
}
inline CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  return hipMemcpyDtoH(dst, tilecHipPtr(src), bytes);
}
inline CUresult cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  return hipMemcpyDtoDAsync(tilecHipPtr(dst), tilecHipPtr(src), bytes, s);
}
inline CUresult cuMemsetD8(CUdeviceptr p, unsigned char v, size_t n) {
  return hipMemsetD8(tilecHipPtr(p), v, n);
}
inline CUresult cuMemsetD16(CUdeviceptr p, unsigned short v, size_t n) {
  return hipMemsetD16(tilecHipPtr(p), v, n);
}
inline CUresult cuMemsetD32(CUdeviceptr p, unsigned v, size_t n) {
  return hipMemsetD32(tilecHipPtr(p), static_cast<int>(v), n);
}

inline CUresult cuEventCreate(CUevent *e, unsigned flags) {
  return hipEventCreateWithFlags(e, flags);
}
inline CUresult cuEventRecord(CUevent e, CUstream s) { return hipEventRecord(e, s); }
inline CUresult cuEventSynchronize(CUevent e) { return hipEventSynchronize(e); }
inline CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  return hipEventElapsedTime(ms, a, b);
}
inline CUresult cuEventDestroy(CUevent e) { return hipEventDestroy(e); }
inline CUresult cuStreamCreate(CUstream *s, unsigned flags) {
  return hipStreamCreateWithFlags(s, flags);
}
inline CUresult cuStreamSynchronize(CUstream s) { return hipStreamSynchronize(s); }
inline CUresult cuStreamDestroy(CUstream s) { return hipStreamDestroy(s); }
