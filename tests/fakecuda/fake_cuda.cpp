// An in-process fake of the CUDA Driver API calls that tilec's runtime makes: contexts are
// per-thread current, modules and functions belong to a context, and a launch checks that its
// function belongs to the current context. Thread-safe. Only for CPU tests of generated headers.
#include "fake_cuda.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

struct CUctx_st {
  int device;
  unsigned long long id;
  bool alive = true;
  int liveModules = 0;
  long launches = 0;
};
struct CUmod_st {
  CUcontext ctx;
  const void *image;
  bool loaded = true;
};
struct CUfunc_st {
  CUmodule module;
  std::string name;
};

namespace {

std::mutex mutex;
std::map<int, std::pair<int, int>> capabilities;
constexpr int kMultiprocessors = 132;            // every device's, as an H200's
std::vector<std::unique_ptr<CUctx_st>> contexts; // never freed: handles stay distinct
std::vector<std::unique_ptr<CUmod_st>> modules;
std::vector<std::unique_ptr<CUfunc_st>> functions;
unsigned long long nextId = 100;
int totalLoads = 0;
long wrongContext = 0;
thread_local std::vector<CUcontext> stack; // the current context is the top
thread_local fake_cuda_launch last{};
void (*launchHook)(void **) = nullptr;

CUcontext current() { return stack.empty() ? nullptr : stack.back(); }

} // namespace

extern "C" {

void fake_cuda_set_capability(int device, int major, int minor) {
  std::lock_guard<std::mutex> lock(mutex);
  capabilities[device] = {major, minor};
}

CUcontext fake_cuda_create_context(int device) {
  std::lock_guard<std::mutex> lock(mutex);
  contexts.push_back(std::make_unique<CUctx_st>(CUctx_st{device, nextId++}));
  stack = {contexts.back().get()};
  return contexts.back().get();
}

void fake_cuda_destroy_context(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(mutex);
  ctx->alive = false;
  ctx->liveModules = 0;
  for (auto &m : modules)
    if (m->ctx == ctx)
      m->loaded = false;
  stack.clear();
}

void fake_cuda_set_current(CUcontext ctx) {
  stack.clear();
  if (ctx)
    stack.push_back(ctx);
}

int fake_cuda_live_modules(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(mutex);
  return ctx->liveModules;
}
int fake_cuda_total_loads(void) {
  std::lock_guard<std::mutex> lock(mutex);
  return totalLoads;
}
long fake_cuda_launches(CUcontext ctx) {
  std::lock_guard<std::mutex> lock(mutex);
  return ctx->launches;
}
long fake_cuda_wrong_context_launches(void) {
  std::lock_guard<std::mutex> lock(mutex);
  return wrongContext;
}
fake_cuda_launch fake_cuda_last_launch(void) { return last; }
void fake_cuda_on_launch(void (*hook)(void **args)) { launchHook = hook; }

CUresult cuInit(unsigned) { return CUDA_SUCCESS; }
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  static std::map<int, CUcontext> primary;
  CUcontext &ctx = primary[dev];
  if (!ctx)
    ctx = fake_cuda_create_context(dev);
  *pctx = ctx;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext ctx) {
  fake_cuda_set_current(ctx);
  return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize(void) { return current() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT; }
CUresult cuMemAlloc(CUdeviceptr *p, size_t bytes) {
  // 256-byte aligned, as the driver's allocations are.
  void *m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!m)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *p = reinterpret_cast<CUdeviceptr>(m);
  return CUDA_SUCCESS;
}
CUresult cuMemFree(CUdeviceptr p) {
  std::free(reinterpret_cast<void *>(p));
  return CUDA_SUCCESS;
}
CUresult cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
  *pctx = current();
  return CUDA_SUCCESS;
}
CUresult cuCtxGetId(CUcontext ctx, unsigned long long *id) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!ctx)
    ctx = current();
  if (!ctx)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!ctx->alive)
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *id = ctx->id;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice *device) {
  if (!current())
    return CUDA_ERROR_INVALID_CONTEXT;
  *device = current()->device;
  return CUDA_SUCCESS;
}
CUresult cuCtxPushCurrent(CUcontext ctx) {
  if (!ctx || !ctx->alive)
    return CUDA_ERROR_INVALID_CONTEXT;
  stack.push_back(ctx);
  return CUDA_SUCCESS;
}
CUresult cuCtxPopCurrent(CUcontext *pctx) {
  if (stack.empty())
    return CUDA_ERROR_INVALID_CONTEXT;
  if (pctx)
    *pctx = stack.back();
  stack.pop_back();
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
  std::lock_guard<std::mutex> lock(mutex);
  auto it = capabilities.find(dev);
  std::pair<int, int> cc = it == capabilities.end() ? std::pair<int, int>{9, 0} : it->second;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *pi = kMultiprocessors;
    break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *pi = cc.first;
    break;
  default:
    *pi = cc.second;
  }
  return CUDA_SUCCESS;
}
CUresult cuModuleLoadData(CUmodule *module, const void *image) {
  CUcontext ctx = current();
  if (!ctx)
    return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::mutex> lock(mutex);
  modules.push_back(std::make_unique<CUmod_st>(CUmod_st{ctx, image}));
  ++ctx->liveModules;
  ++totalLoads;
  *module = modules.back().get();
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule module) {
  std::lock_guard<std::mutex> lock(mutex);
  // The real driver unloads from the module's context; the runtime makes it current first, and
  // this fake insists on it so that the test sees when it does not.
  if (!module || !module->loaded || module->ctx != current())
    return CUDA_ERROR_INVALID_CONTEXT;
  module->loaded = false;
  --module->ctx->liveModules;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *f, CUmodule module, const char *name) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!module || !module->loaded)
    return CUDA_ERROR_INVALID_VALUE;
  functions.push_back(std::make_unique<CUfunc_st>(CUfunc_st{module, name}));
  *f = functions.back().get();
  return CUDA_SUCCESS;
}
CUresult cuFuncSetAttribute(CUfunction, CUfunction_attribute, int) { return CUDA_SUCCESS; }

// Records nothing: the map's bytes only travel to a kernel the fake never runs.
CUresult cuTensorMapEncodeTiled(CUtensorMap *tensorMap, CUtensorMapDataType, cuuint32_t tensorRank,
                                void *, const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
                                const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
                                CUtensorMapL2promotion, CUtensorMapFloatOOBfill) {
  if (tensorMap == nullptr || tensorRank < 1 || tensorRank > 5)
    return CUDA_ERROR_INVALID_VALUE;
  std::memset(tensorMap, 0, sizeof *tensorMap);
  return CUDA_SUCCESS;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned,
                        unsigned, unsigned shared, CUstream, void **args, void **) {
  std::lock_guard<std::mutex> lock(mutex);
  CUcontext ctx = current();
  if (!ctx || !f->module->loaded)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (f->module->ctx != ctx) {
    ++wrongContext;
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  ++ctx->launches;
  last = {f->name.c_str(), f->module->image, {gx, gy, gz}, bx, shared, 0};
  if (launchHook)
    launchHook(args);
  return CUDA_SUCCESS;
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **args, void **extra) {
  int programmatic = 0;
  for (unsigned i = 0; i < c->numAttrs; ++i)
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION)
      programmatic = c->attrs[i].value.programmaticStreamSerializationAllowed;
  CUresult r = cuLaunchKernel(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                              c->blockDimZ, c->sharedMemBytes, c->hStream, args, extra);
  if (r == CUDA_SUCCESS)
    last.programmatic = programmatic;
  return r;
}

} // extern "C"
