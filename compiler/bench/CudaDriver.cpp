#include "bench/CudaDriver.h"

#include <fmt/format.h>

#include <cstdlib>

#include <dlfcn.h>

namespace tilec::bench::cu {

namespace {

template <typename F> bool resolve(void *handle, F &f, const char *symbol, std::string &missing) {
  f = reinterpret_cast<F>(::dlsym(handle, symbol));
  if (!f && missing.empty())
    missing = symbol;
  return f != nullptr;
}

} // namespace

std::unique_ptr<Driver> Driver::load(std::string &error) {
  const char *env = std::getenv("TILEC_LIBCUDA");
  std::string library = env && *env ? env : "libcuda.so.1";
  void *handle = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    error = fmt::format("no CUDA driver: cannot open {} (is an NVIDIA driver installed?)", library);
    return nullptr;
  }
  std::unique_ptr<Driver> d(new Driver());
  d->handle_ = handle;
  std::string missing;
  // The _v2 names are the ones cuda.h maps the plain names to.
  resolve(handle, d->init, "cuInit", missing);
  resolve(handle, d->deviceGetCount, "cuDeviceGetCount", missing);
  resolve(handle, d->deviceGet, "cuDeviceGet", missing);
  resolve(handle, d->deviceGetName, "cuDeviceGetName", missing);
  resolve(handle, d->deviceGetAttribute, "cuDeviceGetAttribute", missing);
  resolve(handle, d->primaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
  resolve(handle, d->primaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", missing);
  resolve(handle, d->ctxSetCurrent, "cuCtxSetCurrent", missing);
  resolve(handle, d->ctxSynchronize, "cuCtxSynchronize", missing);
  resolve(handle, d->moduleLoadData, "cuModuleLoadData", missing);
  resolve(handle, d->moduleUnload, "cuModuleUnload", missing);
  resolve(handle, d->moduleGetFunction, "cuModuleGetFunction", missing);
  resolve(handle, d->funcGetAttribute, "cuFuncGetAttribute", missing);
  resolve(handle, d->funcSetAttribute, "cuFuncSetAttribute", missing);
  resolve(handle, d->memAlloc, "cuMemAlloc_v2", missing);
  resolve(handle, d->memFree, "cuMemFree_v2", missing);
  resolve(handle, d->memcpyHtoD, "cuMemcpyHtoD_v2", missing);
  resolve(handle, d->memcpyDtoH, "cuMemcpyDtoH_v2", missing);
  resolve(handle, d->memcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", missing);
  resolve(handle, d->memsetD32Async, "cuMemsetD32Async", missing);
  resolve(handle, d->launchKernel, "cuLaunchKernel", missing);
  resolve(handle, d->eventCreate, "cuEventCreate", missing);
  resolve(handle, d->eventDestroy, "cuEventDestroy_v2", missing);
  resolve(handle, d->eventRecord, "cuEventRecord", missing);
  resolve(handle, d->eventSynchronize, "cuEventSynchronize", missing);
  resolve(handle, d->eventElapsedTime, "cuEventElapsedTime", missing);
  resolve(handle, d->getErrorName, "cuGetErrorName", missing);
  resolve(handle, d->getErrorString, "cuGetErrorString", missing);
  resolve(handle, d->occupancyMaxActiveBlocksPerMultiprocessor,
          "cuOccupancyMaxActiveBlocksPerMultiprocessor", missing);
  resolve(handle, d->tensorMapEncodeTiled, "cuTensorMapEncodeTiled", missing);
  if (!missing.empty()) {
    error = fmt::format("the CUDA driver in {} has no '{}' (tilec needs a CUDA 12 or later driver)",
                        library, missing);
    return nullptr;
  }
  return d;
}

Driver::~Driver() {
  if (handle_)
    ::dlclose(handle_);
}

std::string Driver::errorText(Result r) const {
  const char *name = nullptr, *text = nullptr;
  if (getErrorName(r, &name) != kSuccess || !name)
    return fmt::format("CUDA error {}", r);
  if (getErrorString(r, &text) != kSuccess || !text)
    return name;
  return fmt::format("{} ({})", name, text);
}

} // namespace tilec::bench::cu
