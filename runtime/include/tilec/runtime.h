// tilec runtime: the code every tilec-generated header shares (module state, lazy loading,
// argument checks), over the CUDA Driver API only. Header-only, C++17.
//
// tilec pastes this file verbatim into each generated header, so a generated header needs
// nothing but <cuda.h>; the include guard lets several generated headers (and this file) share
// one translation unit.
//
// Loading: a generated header's load() loads its module into the CUDA context that is current
// on the calling thread at the first successful load; later launches use that module whatever
// context is current then. Call cuInit() and make a context current first. load() and the
// lazy load in a launch are thread-safe; unload() must not race with launches.
//
// Linkage: everything here and in the generated headers has hidden visibility on ELF (GCC and
// Clang). Each shared library that includes a generated header keeps its own runtime, module
// state and embedded image; none of them becomes a process-wide (GNU-unique or interposable)
// symbol, so two libraries built from headers of one stem with different -D values each launch
// their own kernels.
#ifndef TILEC_RUNTIME_H
#define TILEC_RUNTIME_H

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace tilec::rt {

/// Bumped when a generated header's use of this file changes incompatibly.
inline constexpr int kRuntimeVersion = 1;

/// What a generated header tells the runtime about one kernel.
struct KernelSpec {
  const char *name;            // symbol in the module
  unsigned dynamicSharedBytes; // raised above the 48 KB default at load when needed
};

/// The loaded module of one generated header and its N functions.
template <std::size_t N> struct ModuleState {
  std::mutex mutex;
  std::atomic<bool> loaded{false};
  CUmodule module = nullptr;
  std::array<CUfunction, N> functions{};
};

inline constexpr unsigned kDefaultDynamicSharedLimit = 48 * 1024;

/// Loads `image` (a cubin or NUL-terminated PTX) and looks up every kernel, once. A failure
/// leaves the state unloaded so that a later call can retry (say, after a context is made
/// current).
template <std::size_t N>
inline CUresult load(ModuleState<N> &state, const void *image,
                     const std::array<KernelSpec, N> &specs) {
  if (state.loaded.load(std::memory_order_acquire))
    return CUDA_SUCCESS;
  std::lock_guard<std::mutex> lock(state.mutex);
  if (state.loaded.load(std::memory_order_relaxed))
    return CUDA_SUCCESS;
  CUmodule module = nullptr;
  CUresult r = cuModuleLoadData(&module, image);
  if (r != CUDA_SUCCESS)
    return r;
  std::array<CUfunction, N> functions{};
  for (std::size_t i = 0; i < N; ++i) {
    r = cuModuleGetFunction(&functions[i], module, specs[i].name);
    if (r == CUDA_SUCCESS && specs[i].dynamicSharedBytes > kDefaultDynamicSharedLimit)
      r = cuFuncSetAttribute(functions[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                             static_cast<int>(specs[i].dynamicSharedBytes));
    if (r != CUDA_SUCCESS) {
      cuModuleUnload(module);
      return r;
    }
  }
  state.module = module;
  state.functions = functions;
  state.loaded.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

template <std::size_t N> inline void unload(ModuleState<N> &state) {
  std::lock_guard<std::mutex> lock(state.mutex);
  if (!state.loaded.load(std::memory_order_relaxed))
    return;
  state.loaded.store(false, std::memory_order_release);
  cuModuleUnload(state.module);
  state.module = nullptr;
  state.functions = {};
}

// ---- Argument checks. Every failure is CUDA_ERROR_INVALID_VALUE (nothing was launched and the
// context is untouched), including misalignment: CUDA_ERROR_MISALIGNED_ADDRESS reads as a sticky
// error of a kernel that ran.

/// A tensor pointer must be non-null and aligned to what the kernel assumes.
inline CUresult checkTensor(CUdeviceptr p, std::uint64_t alignBytes) {
  if (p == 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (alignBytes > 1 && p % alignBytes != 0)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

/// A symbolic dimension must be positive and fit the 32-bit index arithmetic kernels use.
inline CUresult checkDim(std::int64_t d) {
  return d > 0 && d <= 2147483647 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/// The grid must be non-empty and within the hardware limits.
inline CUresult checkGrid(std::int64_t x, std::int64_t y, std::int64_t z) {
  constexpr std::int64_t maxX = 2147483647, maxYZ = 65535;
  if (x < 1 || y < 1 || z < 1 || x > maxX || y > maxYZ || z > maxYZ)
    return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

// ---- Grid arithmetic, with the language's (Python's) integer semantics. A zero divisor gives 0,
// which checkGrid then rejects instead of the host crashing.
inline std::int64_t floorDiv(std::int64_t a, std::int64_t b) {
  if (b == 0)
    return 0;
  std::int64_t q = a / b;
  return (a % b != 0 && ((a % b) < 0) != (b < 0)) ? q - 1 : q;
}
inline std::int64_t floorMod(std::int64_t a, std::int64_t b) {
  if (b == 0)
    return 0;
  std::int64_t r = a % b;
  return (r != 0 && (r < 0) != (b < 0)) ? r + b : r;
}
inline std::int64_t truncDiv(std::int64_t a, std::int64_t b) { return b == 0 ? 0 : a / b; }
inline std::int64_t min(std::int64_t a, std::int64_t b) { return a < b ? a : b; }
inline std::int64_t max(std::int64_t a, std::int64_t b) { return a < b ? b : a; }

/// Loads lazily, then launches function `index` of the module on a 1-D block.
template <std::size_t N>
inline CUresult launch(ModuleState<N> &state, const void *image,
                       const std::array<KernelSpec, N> &specs, std::size_t index,
                       std::int64_t gridX, std::int64_t gridY, std::int64_t gridZ, unsigned threads,
                       CUstream stream, void **args) {
  CUresult r = checkGrid(gridX, gridY, gridZ);
  if (r != CUDA_SUCCESS)
    return r;
  r = load(state, image, specs);
  if (r != CUDA_SUCCESS)
    return r;
  return cuLaunchKernel(state.functions[index], static_cast<unsigned>(gridX),
                        static_cast<unsigned>(gridY), static_cast<unsigned>(gridZ), threads, 1, 1,
                        specs[index].dynamicSharedBytes, stream, args, nullptr);
}

} // namespace tilec::rt

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif // TILEC_RUNTIME_H
