// A stand-in for libcuda.so.1 that `tilec bench` opens through TILEC_LIBCUDA in CPU tests: one
// device (compute capability 9.0, 132 SMs), host memory for device memory, every event 0.5 ms
// apart, and each launch printed to stderr with its grid, block, shared memory and the first
// FAKE_CUDA_ARGS kernel arguments (8 bytes each, as hex; tensor maps by their first 8 bytes).
// FAKE_CUDA_NO_DEVICE=1 reports no device. FAKE_CUDA_TIME=blocks makes a launch of B blocks take
// 0.001 * (1 + |B - 64|) ms, so that `tilec tune` picks different variants at different shapes.
// FAKE_CUDA_WRITE=I makes each launch store its block count as a float32 into the first element
// of kernel argument I (a tensor), so that variants of other grids disagree.
// FAKE_CUDA_FIT_THREADS=T: a block of more than T threads does not fit on an SM (occupancy 0).
// Only for tests/lit/bench.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern "C" {

using CUresult = int;
using CUdeviceptr = unsigned long long;
struct Fake {
  int unused;
};
using Handle = Fake *;

static Fake kContext, kModule, kFunction, kEvent;
static unsigned long long lastBlocks = 0;

CUresult cuInit(unsigned) { return 0; }
CUresult cuDeviceGetCount(int *n) {
  const char *none = std::getenv("FAKE_CUDA_NO_DEVICE");
  *n = none && *none == '1' ? 0 : 1;
  return 0;
}
CUresult cuDeviceGet(int *d, int ordinal) {
  *d = ordinal;
  return ordinal == 0 ? 0 : 101; // CUDA_ERROR_INVALID_DEVICE
}
CUresult cuDeviceGetName(char *name, int len, int) {
  std::snprintf(name, static_cast<size_t>(len), "Fake GPU");
  return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int) {
  switch (attr) {
  case 16: // multiprocessors
    *v = 132;
    return 0;
  case 38: // L2 bytes
    *v = 1 << 20;
    return 0;
  case 75:
    *v = 9;
    return 0;
  case 76:
    *v = 0;
    return 0;
  case 97: // shared memory per block, opt-in
    *v = 232448;
    return 0;
  }
  return 1; // CUDA_ERROR_INVALID_VALUE
}
CUresult cuDevicePrimaryCtxRetain(Handle *ctx, int) {
  *ctx = &kContext;
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int) { return 0; }
CUresult cuCtxSetCurrent(Handle) { return 0; }
CUresult cuCtxSynchronize() { return 0; }
CUresult cuModuleLoadData(Handle *m, const void *image) {
  // PTX (no ptxas in CI) or a cubin (ELF): anything else is a bad image.
  const char *text = static_cast<const char *>(image);
  if (std::strncmp(text,
                   "\x7f"
                   "ELF",
                   4) != 0 &&
      !std::strstr(text, ".entry"))
    return 200; // CUDA_ERROR_INVALID_IMAGE
  *m = &kModule;
  return 0;
}
CUresult cuModuleUnload(Handle) { return 0; }
CUresult cuModuleGetFunction(Handle *f, Handle, const char *name) {
  std::fprintf(stderr, "fake: function %s\n", name);
  *f = &kFunction;
  return 0;
}
CUresult cuFuncGetAttribute(int *v, int attr, Handle) {
  *v = attr == 4 ? 90 : 0; // registers
  return 0;
}
CUresult cuFuncSetAttribute(Handle, int attr, int value) {
  std::fprintf(stderr, "fake: function attribute %d = %d\n", attr, value);
  return 0;
}
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  // 256-byte aligned like the driver's allocations.
  void *mem = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  *p = reinterpret_cast<CUdeviceptr>(mem);
  return mem ? 0 : 2; // CUDA_ERROR_OUT_OF_MEMORY
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  std::free(reinterpret_cast<void *>(p));
  return 0;
}
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  std::memcpy(reinterpret_cast<void *>(dst), src, n);
  return 0;
}
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  std::memcpy(dst, reinterpret_cast<const void *>(src), n);
  return 0;
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, Handle) {
  std::memcpy(reinterpret_cast<void *>(dst), reinterpret_cast<const void *>(src), n);
  return 0;
}
CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned v, size_t n, Handle) {
  auto *p = reinterpret_cast<unsigned *>(dst);
  for (size_t i = 0; i < n; ++i)
    p[i] = v;
  return 0;
}
CUresult cuLaunchKernel(Handle, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shared, Handle, void **args, void **) {
  lastBlocks = static_cast<unsigned long long>(gx) * gy * gz;
  if (const char *w = std::getenv("FAKE_CUDA_WRITE")) {
    CUdeviceptr p = 0;
    std::memcpy(&p, args[std::atoi(w)], sizeof p);
    float blocks = static_cast<float>(lastBlocks);
    std::memcpy(reinterpret_cast<void *>(p), &blocks, sizeof blocks);
  }
  static int printed = 0;
  if (printed++ == 0) { // the first launch only: the runner repeats it
    std::fprintf(stderr, "fake: launch grid %u %u %u block %u %u %u shared %u", gx, gy, gz, bx, by,
                 bz, shared);
    const char *n = std::getenv("FAKE_CUDA_ARGS");
    for (int i = 0; n && i < std::atoi(n); ++i) {
      unsigned long long v = 0;
      std::memcpy(&v, args[i], 8);
      std::fprintf(stderr, " arg%d=%llx", i, v);
    }
    std::fprintf(stderr, "\n");
  }
  return 0;
}
CUresult cuEventCreate(Handle *e, unsigned) {
  *e = &kEvent;
  return 0;
}
CUresult cuEventDestroy_v2(Handle) { return 0; }
CUresult cuEventRecord(Handle, Handle) { return 0; }
CUresult cuEventSynchronize(Handle) { return 0; }
CUresult cuEventElapsedTime(float *ms, Handle, Handle) {
  const char *mode = std::getenv("FAKE_CUDA_TIME");
  long long off = static_cast<long long>(lastBlocks) - 64;
  *ms = mode && std::strcmp(mode, "blocks") == 0
            ? 0.001f * static_cast<float>(1 + (off < 0 ? -off : off))
            : 0.5f;
  return 0;
}
CUresult cuGetErrorName(CUresult r, const char **s) {
  *s = r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : r == 200 ? "CUDA_ERROR_INVALID_IMAGE" : "CUDA_ERROR";
  return 0;
}
CUresult cuGetErrorString(CUresult, const char **s) {
  *s = "fake error";
  return 0;
}
CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, Handle, int threads, size_t) {
  const char *fit = std::getenv("FAKE_CUDA_FIT_THREADS");
  *n = fit && threads > std::atoi(fit) ? 0 : 1;
  return 0;
}
CUresult cuTensorMapEncodeTiled(void *map, int type, unsigned rank, void *, const void *,
                                const void *, const unsigned *box, const void *, int, int swizzle,
                                int, int) {
  // A recognisable map: type, rank, swizzle and the first box extent.
  unsigned long long v = (static_cast<unsigned long long>(type) << 48) |
                         (static_cast<unsigned long long>(rank) << 40) |
                         (static_cast<unsigned long long>(swizzle) << 32) | box[0];
  std::memset(map, 0, 128);
  std::memcpy(map, &v, 8);
  return 0;
}

} // extern "C"
