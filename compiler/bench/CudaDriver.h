// The CUDA Driver API as `tilec bench` and `tilec tune` use it, opened at run time with dlopen
// so that tilec builds and runs (check, compile) where no driver is installed. Only the entry
// points and enum values the runner needs are declared: the CUDA toolkit's cuda.h is not needed
// to build tilec.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace tilec::bench::cu {

using Result = int;
using DevicePtr = unsigned long long;
using Device = int;
using Context = struct CUctx_st *;
using Module = struct CUmod_st *;
using Function = struct CUfunc_st *;
using Stream = struct CUstream_st *;
using Event = struct CUevent_st *;

inline constexpr Result kSuccess = 0;

/// A CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) TensorMap {
  unsigned long long opaque[16];
};

// Enum values as cuda.h defines them (CUdevice_attribute, CUfunction_attribute, the tensor map
// enums).
inline constexpr int kAttrMultiprocessorCount = 16;
inline constexpr int kAttrL2CacheSize = 38;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;
inline constexpr int kAttrMaxSharedPerBlockOptin = 97;
inline constexpr int kFuncAttrLocalSizeBytes = 3;
inline constexpr int kFuncAttrNumRegs = 4;
inline constexpr int kFuncAttrMaxDynamicSharedBytes = 8;
inline constexpr int kTensorMapInterleaveNone = 0;
inline constexpr int kTensorMapL2Promotion256B = 3;
inline constexpr int kTensorMapOobFillNone = 0;

/// The opened driver: every pointer is resolved (load() fails otherwise).
struct Driver {
  Result (*init)(unsigned);
  Result (*deviceGetCount)(int *);
  Result (*deviceGet)(Device *, int);
  Result (*deviceGetName)(char *, int, Device);
  Result (*deviceGetAttribute)(int *, int, Device);
  Result (*primaryCtxRetain)(Context *, Device);
  Result (*primaryCtxRelease)(Device);
  Result (*ctxSetCurrent)(Context);
  Result (*ctxSynchronize)();
  Result (*moduleLoadData)(Module *, const void *);
  Result (*moduleUnload)(Module);
  Result (*moduleGetFunction)(Function *, Module, const char *);
  Result (*funcGetAttribute)(int *, int, Function);
  Result (*funcSetAttribute)(Function, int, int);
  Result (*memAlloc)(DevicePtr *, size_t);
  Result (*memFree)(DevicePtr);
  Result (*memcpyHtoD)(DevicePtr, const void *, size_t);
  Result (*memcpyDtoH)(void *, DevicePtr, size_t);
  Result (*memcpyDtoDAsync)(DevicePtr, DevicePtr, size_t, Stream);
  Result (*memsetD32Async)(DevicePtr, unsigned, size_t, Stream);
  Result (*launchKernel)(Function, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         unsigned, Stream, void **, void **);
  Result (*eventCreate)(Event *, unsigned);
  Result (*eventDestroy)(Event);
  Result (*eventRecord)(Event, Stream);
  Result (*eventSynchronize)(Event);
  Result (*eventElapsedTime)(float *, Event, Event);
  Result (*getErrorName)(Result, const char **);
  Result (*getErrorString)(Result, const char **);
  Result (*occupancyMaxActiveBlocksPerMultiprocessor)(int *, Function, int, size_t);
  Result (*tensorMapEncodeTiled)(TensorMap *, int, unsigned, void *, const unsigned long long *,
                                 const unsigned long long *, const unsigned *, const unsigned *,
                                 int, int, int, int);

  /// Opens libcuda.so.1 (or $TILEC_LIBCUDA) and resolves every entry point; null and a
  /// one-line reason in `error` when there is no usable driver.
  static std::unique_ptr<Driver> load(std::string &error);
  ~Driver();
  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;

  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"-style text for `r`.
  std::string errorText(Result r) const;

private:
  Driver() = default;
  void *handle_ = nullptr;
};

} // namespace tilec::bench::cu
