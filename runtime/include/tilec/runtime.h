// tilec runtime: the code every tilec-generated header shares (per-context module state, image
// selection, argument checks, launch), over the CUDA Driver API only. Header-only, C++17.
//
// tilec pastes this file verbatim into each generated header, so a generated header needs
// nothing but <cuda.h>; the include guard lets several generated headers (and this file) share
// one translation unit.
//
// Loading: a launch loads its header's module into the CUDA context current on the calling
// thread the first time that context launches from the header, and uses that context's
// functions afterwards, so one process can drive several GPUs (one context each, from one
// thread or many). Loading and launching are thread-safe; unload() unloads from every context
// the module was loaded into and must not race with launches of the same header.
//
// Linkage: everything here and in the generated headers has hidden visibility on ELF (GCC and
// Clang). Each shared library that includes a generated header keeps its own runtime, module
// state and embedded image; none of them becomes a process-wide (GNU-unique or interposable)
// symbol, so two libraries built from headers of one stem with different -D values each launch
// their own kernels.
#ifndef TILEC_RUNTIME_H
#define TILEC_RUNTIME_H

#include <cuda.h>

// Pasted ahead of this file in a generated header; included from beside it otherwise.
#ifndef TILEC_RUNTIME_CORE_H
#include "runtime_core.h"
#endif

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <numeric>

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace tilec::rt {

/// Bumped when a generated header's use of this file changes incompatibly.
inline constexpr int kRuntimeVersion = 2;

/// What a generated header tells the runtime about one kernel as compiled for one image.
struct KernelSpec {
  const char *name;            // symbol in the module
  unsigned threads;            // block size (1-D)
  unsigned dynamicSharedBytes; // raised above the 48 KB default at load when needed
  /// A persistent kernel walks the grid's blocks itself: it is launched with at most this many
  /// blocks per SM of the device (0: one block per grid block).
  unsigned persistentBlocksPerSM = 0;
  /// The kernel waits for the grids ahead of it in the stream in its own code (griddepcontrol,
  /// sm_90+), so it is launched with programmatic stream serialization: its launch overlaps the
  /// completion of the kernel before it (that kernel's memory flush once its blocks have exited).
  bool programmaticLaunch = false;
  /// A persistent kernel whose tiles differ in work along x: launched on the largest block count
  /// up to its limit that is coprime with the grid's x extent, so that each block meets every x
  /// (tilec's persistentLaunchBlocks says why).
  bool balanceX = false;
};

enum class ImageKind { Cubin, Ptx };

/// One embedded binary: machine code for one GPU architecture, or PTX that the driver compiles
/// for that architecture and every later one.
template <std::size_t N> struct Image {
  const char *name;  // "sm_90a cubin", for messages and loadedImage()
  int major, minor;  // sm_XY
  bool archSpecific; // sm_90a: runs on compute capability 9.0 only
  ImageKind kind;
  const void *data; // a cubin, or NUL-terminated PTX
  std::array<KernelSpec, N> kernels;
};

/// How well `img` fits a device of compute capability major.minor: 0 when it cannot run there;
/// otherwise higher is better. An exact arch-specific cubin beats any other cubin, a cubin
/// beats PTX (no JIT at load), and among equals the newer architecture wins.
template <std::size_t N> inline int imageFit(const Image<N> &img, int major, int minor) {
  int device = major * 10 + minor, target = img.major * 10 + img.minor;
  if (img.kind == ImageKind::Ptx)
    return device >= target ? 1000 + target : 0;
  if (img.archSpecific)
    return device == target ? 3000 : 0;
  // Machine code runs on later minor versions of its major version only.
  return major == img.major && minor >= img.minor ? 2000 + target : 0;
}

// ---- Why the last launch or load failed on this thread (for logs): the CUresult stays the
// error channel, this only adds detail. Set on every failure, never cleared by a success.

using rtcore::Grid;
using rtcore::ValueKind;
using LaunchError = rtcore::LaunchError<CUresult>;

inline LaunchError &lastErrorSlot() { return rtcore::lastErrorSlot<CUresult>(); }

/// The last failure on the calling thread (result CUDA_SUCCESS when there was none).
inline const LaunchError &lastError() { return lastErrorSlot(); }

/// The last failure as one line, e.g. "matmul_relu: argument 'A' = 0x0: null pointer".
/// The text lives in a thread-local buffer until the next call on this thread.
inline const char *lastErrorMessage() { return rtcore::lastErrorMessage<CUresult>("CUresult"); }

inline CUresult fail(CUresult r, const char *kernel, const char *argument, const char *reason,
                     ValueKind kind = ValueKind::None, std::int64_t value = 0) {
  return rtcore::fail(r, kernel, argument, reason, kind, value);
}

// ---- Argument checks (rules in runtime_core.h). Every failure is CUDA_ERROR_INVALID_VALUE
// (nothing was launched and the context is untouched), including misalignment:
// CUDA_ERROR_MISALIGNED_ADDRESS reads as a sticky error of a kernel that ran.

inline CUresult checkTensor(CUdeviceptr p, std::uint64_t alignBytes, const char *kernel,
                            const char *argument) {
  if (const char *why = rtcore::tensorProblem(p, alignBytes))
    return fail(CUDA_ERROR_INVALID_VALUE, kernel, argument, why, ValueKind::Pointer,
                static_cast<std::int64_t>(p));
  return CUDA_SUCCESS;
}

inline CUresult checkDim(std::int64_t d, const char *kernel, const char *argument) {
  if (const char *why = rtcore::dimProblem(d))
    return fail(CUDA_ERROR_INVALID_VALUE, kernel, argument, why, ValueKind::Integer, d);
  return CUDA_SUCCESS;
}

/// The grid must be non-empty and within the hardware limits.
inline CUresult checkGrid(const Grid &g, const char *kernel) {
  std::int64_t value = 0;
  if (const char *why = rtcore::gridProblem(g, 2147483647, "grid.x outside [1, 2^31 - 1]", value))
    return fail(CUDA_ERROR_INVALID_VALUE, kernel, "grid", why, ValueKind::Integer, value);
  return CUDA_SUCCESS;
}

// ---- Grid arithmetic (runtime_core.h), named here for the generated grid functions.
using rtcore::floorDiv;
using rtcore::floorMod;
using rtcore::max;
using rtcore::min;
using rtcore::truncDiv;

// ---- TMA tensor maps ---------------------------------------------------------------------
// A kernel that loads tiles by TMA takes one CUtensorMap per tiled view of a tensor, encoded
// here from the launch's pointer and dimensions. Encoding costs about a microsecond, so each
// launch site keeps the last map it encoded and reuses it while pointer and extents repeat.

struct TensorMapCache {
  std::mutex mutex;
  bool valid = false;
  bool ok = false;
  CUdeviceptr ptr = 0;
  std::int64_t dims[5] = {};
  std::int64_t strides[4] = {};
  CUtensorMap map;
};

/// Encodes (or finds in `cache`) the map of a `rank`-dimensional tiled view of the tensor at
/// `ptr`: `dims` in elements and `strides` (dimensions 1..) in bytes, innermost first, boxes of
/// `box` elements, swizzled by `swizzle`, out-of-bounds elements read as zero. Sets `*ok` to
/// false, and returns CUDA_SUCCESS, when TMA cannot address the tensor (a stride not a multiple
/// of 16 bytes, an extent beyond 2^32): the kernel then copies without TMA.
inline CUresult tensorMap(TensorMapCache &cache, CUtensorMap *out, CUtensorMapDataType type,
                          unsigned rank, CUdeviceptr ptr, const std::int64_t *dims,
                          const std::int64_t *strides, const unsigned *box,
                          CUtensorMapSwizzle swizzle, bool *ok) {
  std::lock_guard<std::mutex> lock(cache.mutex);
  bool same = cache.valid && cache.ptr == ptr;
  for (unsigned i = 0; same && i < rank; ++i)
    same = cache.dims[i] == dims[i] && (i + 1 == rank || cache.strides[i] == strides[i]);
  if (!same) {
    cuuint64_t gdims[5], gstrides[4];
    cuuint32_t boxes[5], elementStrides[5];
    bool fits = ptr % 16 == 0;
    for (unsigned i = 0; i < rank; ++i) {
      fits = fits && dims[i] > 0 && dims[i] <= (std::int64_t{1} << 32);
      gdims[i] = static_cast<cuuint64_t>(dims[i]);
      boxes[i] = box[i];
      elementStrides[i] = 1;
      if (i + 1 < rank) {
        fits =
            fits && strides[i] > 0 && strides[i] % 16 == 0 && strides[i] < (std::int64_t{1} << 40);
        gstrides[i] = static_cast<cuuint64_t>(strides[i]);
      }
    }
    cache.ok = false;
    if (fits) {
      CUresult r = cuTensorMapEncodeTiled(
          &cache.map, type, rank, reinterpret_cast<void *>(ptr), gdims, gstrides, boxes,
          elementStrides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle,
          CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (r != CUDA_SUCCESS) {
        cache.valid = false;
        return r;
      }
      cache.ok = true;
    }
    cache.valid = true;
    cache.ptr = ptr;
    for (unsigned i = 0; i < rank; ++i) {
      cache.dims[i] = dims[i];
      if (i + 1 < rank)
        cache.strides[i] = strides[i];
    }
  }
  *ok = *ok && cache.ok;
  *out = cache.ok ? cache.map : CUtensorMap{};
  return CUDA_SUCCESS;
}

// ---- Per-context module state.

inline constexpr unsigned kDefaultDynamicSharedLimit = 48 * 1024;
/// Contexts one header can be loaded into between two unload() calls.
inline constexpr std::size_t kMaxContexts = 64;

/// The module of one header as loaded into one context.
template <std::size_t N> struct ContextModule {
  /// Key of the context (contextKey()); 0 while the slot is free. Written last, with release,
  /// so that a launch that finds its key sees the fields below complete.
  std::atomic<unsigned long long> key{0};
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  std::size_t image = 0;   // index into the header's images
  int multiprocessors = 0; // of the context's device, for persistent launches
  std::array<CUfunction, N> functions{};
};

/// The loaded modules of one generated header: launches find their context's slot without
/// locking; loading into a new context takes the mutex and appends a slot.
template <std::size_t N> struct ModuleState {
  std::mutex mutex;
  std::atomic<std::size_t> used{0};
  std::array<ContextModule<N>, kMaxContexts> slots;
};

/// A key for the current context that is never reused within the process (a destroyed
/// context's handle can be reused by a new one; its id cannot). 0 is never a key.
inline CUresult contextKey(CUcontext ctx, unsigned long long &key) {
#if CUDA_VERSION >= 12000
  unsigned long long id = 0;
  CUresult r = cuCtxGetId(ctx, &id);
  if (r != CUDA_SUCCESS)
    return r;
  key = id + 1;
#else
  if (!ctx && cuCtxGetCurrent(&ctx) != CUDA_SUCCESS)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (!ctx)
    return CUDA_ERROR_INVALID_CONTEXT;
  key = static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(ctx));
#endif
  return CUDA_SUCCESS;
}

template <std::size_t N>
inline const ContextModule<N> *findLoaded(const ModuleState<N> &state, unsigned long long key) {
  std::size_t used = state.used.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < used; ++i)
    if (state.slots[i].key.load(std::memory_order_acquire) == key)
      return &state.slots[i];
  return nullptr;
}

/// The image that fits the current context's device best, or `count` when none fits.
template <std::size_t N, std::size_t M>
inline CUresult pickImage(const std::array<Image<N>, M> &images, std::size_t &picked) {
  CUdevice device = 0;
  CUresult r = cuCtxGetDevice(&device);
  int major = 0, minor = 0;
  if (r == CUDA_SUCCESS)
    r = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  if (r == CUDA_SUCCESS)
    r = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  if (r != CUDA_SUCCESS)
    return fail(r, nullptr, nullptr, "cannot query the current device's compute capability");
  int best = 0;
  picked = M;
  for (std::size_t i = 0; i < M; ++i)
    if (int fit = imageFit(images[i], major, minor); fit > best)
      best = fit, picked = i;
  if (picked == M)
    return fail(CUDA_ERROR_NO_BINARY_FOR_GPU, nullptr, nullptr,
                "no embedded image runs on this GPU's compute capability (recompile with "
                "--arch for it, or add +ptx)",
                ValueKind::Integer, major * 10 + minor);
  return CUDA_SUCCESS;
}

/// Loads the best-fitting image into the current context unless it is loaded there already,
/// and looks up every kernel. A failure leaves nothing loaded for the context, so a later call
/// can retry.
template <std::size_t N, std::size_t M>
inline CUresult load(ModuleState<N> &state, const std::array<Image<N>, M> &images,
                     const ContextModule<N> *&loaded) {
  unsigned long long key = 0;
  if (CUresult r = contextKey(nullptr, key); r != CUDA_SUCCESS)
    return fail(r, nullptr, nullptr, "no current CUDA context (call cuInit and make one current)");
  if ((loaded = findLoaded(state, key)))
    return CUDA_SUCCESS;
  std::lock_guard<std::mutex> lock(state.mutex);
  if ((loaded = findLoaded(state, key)))
    return CUDA_SUCCESS;
  std::size_t used = state.used.load(std::memory_order_relaxed);
  if (used == kMaxContexts)
    return fail(CUDA_ERROR_OUT_OF_MEMORY, nullptr, nullptr,
                "loaded into too many contexts (call unload() to start over)");
  std::size_t picked = 0;
  if (CUresult r = pickImage(images, picked); r != CUDA_SUCCESS)
    return r;
  const Image<N> &image = images[picked];
  CUcontext context = nullptr;
  CUresult r = cuCtxGetCurrent(&context);
  if (r != CUDA_SUCCESS)
    return fail(r, nullptr, nullptr, "cuCtxGetCurrent failed");
  CUdevice device = 0;
  int multiprocessors = 0;
  r = cuCtxGetDevice(&device);
  if (r == CUDA_SUCCESS)
    r = cuDeviceGetAttribute(&multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
  if (r != CUDA_SUCCESS)
    return fail(r, nullptr, nullptr, "cannot query the current device's multiprocessor count");
  CUmodule module = nullptr;
  r = cuModuleLoadData(&module, image.data);
  if (r != CUDA_SUCCESS)
    return fail(r, nullptr, nullptr, "cuModuleLoadData failed");
  ContextModule<N> &slot = state.slots[used];
  for (std::size_t i = 0; i < N; ++i) {
    const KernelSpec &spec = image.kernels[i];
    r = cuModuleGetFunction(&slot.functions[i], module, spec.name);
    if (r == CUDA_SUCCESS && spec.dynamicSharedBytes > kDefaultDynamicSharedLimit)
      r = cuFuncSetAttribute(slot.functions[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             static_cast<int>(spec.dynamicSharedBytes));
    if (r != CUDA_SUCCESS) {
      cuModuleUnload(module);
      return fail(r, spec.name, nullptr, "cannot look up or configure the kernel after loading");
    }
  }
  slot.context = context;
  slot.module = module;
  slot.image = picked;
  slot.multiprocessors = multiprocessors;
  slot.key.store(key, std::memory_order_release);
  state.used.store(used + 1, std::memory_order_release);
  loaded = &slot;
  return CUDA_SUCCESS;
}

/// Unloads the module from every context it was loaded into (a context destroyed since took
/// its module with it and is skipped). Must not race with launches of the same header.
template <std::size_t N> inline void unload(ModuleState<N> &state) {
  std::lock_guard<std::mutex> lock(state.mutex);
  std::size_t used = state.used.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < used; ++i) {
    ContextModule<N> &slot = state.slots[i];
    unsigned long long key = slot.key.load(std::memory_order_relaxed), now = 0;
    // A module belongs to its context: unload it with that context current. A destroyed context
    // fails contextKey (CUDA 12 and later), or its handle now names another context.
    if (key != 0 && contextKey(slot.context, now) == CUDA_SUCCESS && now == key &&
        cuCtxPushCurrent(slot.context) == CUDA_SUCCESS) {
      cuModuleUnload(slot.module);
      CUcontext popped = nullptr;
      cuCtxPopCurrent(&popped);
    }
    slot.key.store(0, std::memory_order_relaxed);
    slot.context = nullptr;
    slot.module = nullptr;
    slot.functions = {};
  }
  state.used.store(0, std::memory_order_release);
}

/// The name of the image loaded into the current context ("sm_90a cubin"), or null when none is.
template <std::size_t N, std::size_t M>
inline const char *loadedImage(const ModuleState<N> &state, const std::array<Image<N>, M> &images) {
  unsigned long long key = 0;
  if (contextKey(nullptr, key) != CUDA_SUCCESS)
    return nullptr;
  const ContextModule<N> *loaded = findLoaded(state, key);
  return loaded ? images[loaded->image].name : nullptr;
}

/// Checks the grid, loads lazily into the current context, then launches kernel `index` on a
/// 1-D block with the facts of the image loaded there (a persistent kernel on as many blocks of
/// the grid as fit on the device at once).
template <std::size_t N, std::size_t M>
inline CUresult launch(ModuleState<N> &state, const std::array<Image<N>, M> &images,
                       std::size_t index, const Grid &grid, CUstream stream, void **args) {
  const char *kernel = images[0].kernels[index].name;
  if (CUresult r = checkGrid(grid, kernel); r != CUDA_SUCCESS)
    return r;
  const ContextModule<N> *loaded = nullptr;
  if (CUresult r = load(state, images, loaded); r != CUDA_SUCCESS) {
    lastErrorSlot().kernel = kernel;
    return r;
  }
  const KernelSpec &spec = images[loaded->image].kernels[index];
  Grid launched = grid;
  if (spec.persistentBlocksPerSM > 0) {
    // checkGrid bounds the product below 2^63; the kernel numbers the blocks in 32 bits.
    const std::int64_t blocks = grid.x * grid.y * grid.z;
    if (blocks > 2147483647)
      return fail(CUDA_ERROR_INVALID_VALUE, kernel, "grid",
                  "a persistent kernel's grid holds more than 2^31 - 1 blocks", ValueKind::Integer,
                  blocks);
    const std::int64_t resident =
        static_cast<std::int64_t>(loaded->multiprocessors > 0 ? loaded->multiprocessors : 1) *
        spec.persistentBlocksPerSM;
    std::int64_t g = blocks < resident ? blocks : resident;
    if (spec.balanceX && g < blocks && grid.x > 1)
      while (g > 1 && std::gcd(g, grid.x) != 1)
        --g;
    launched = {g, 1, 1};
  }
#if CUDA_VERSION >= 12000
  // (Before CUDA 12 there is no cuLaunchKernelEx: a plain launch, the kernel's wait returns.)
  if (spec.programmaticLaunch) {
    CUlaunchAttribute attribute{};
    attribute.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attribute.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = static_cast<unsigned>(launched.x);
    config.gridDimY = static_cast<unsigned>(launched.y);
    config.gridDimZ = static_cast<unsigned>(launched.z);
    config.blockDimX = spec.threads;
    config.blockDimY = config.blockDimZ = 1;
    config.sharedMemBytes = spec.dynamicSharedBytes;
    config.hStream = stream;
    config.attrs = &attribute;
    config.numAttrs = 1;
    CUresult r = cuLaunchKernelEx(&config, loaded->functions[index], args, nullptr);
    if (r != CUDA_SUCCESS)
      return fail(r, kernel, nullptr, "cuLaunchKernelEx failed");
    return CUDA_SUCCESS;
  }
#endif
  CUresult r = cuLaunchKernel(loaded->functions[index], static_cast<unsigned>(launched.x),
                              static_cast<unsigned>(launched.y), static_cast<unsigned>(launched.z),
                              spec.threads, 1, 1, spec.dynamicSharedBytes, stream, args, nullptr);
  if (r != CUDA_SUCCESS)
    return fail(r, kernel, nullptr, "cuLaunchKernel failed");
  return CUDA_SUCCESS;
}

} // namespace tilec::rt

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif // TILEC_RUNTIME_H
