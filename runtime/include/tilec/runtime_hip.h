// tilec HIP runtime: the code every tilec-generated HIP header (AMD targets) shares: per-device
// module state, the choice of code object by the device's gfx architecture, argument checks and
// the launch, over HIP's module API only. Header-only, C++17.
//
// tilec pastes this file verbatim into each generated HIP header, so such a header needs nothing
// but <hip/hip_runtime_api.h>; the include guard lets several generated headers share one
// translation unit. The CUDA headers' runtime (runtime.h) has the same functions over the CUDA
// Driver API; this one differs where the platforms do:
// - HIP has one (primary) context per device: a header loads its module once per device, the
//   device current on the calling thread (hipSetDevice) at its first launch there.
// - A code object runs on its own gfx architecture only: the device's gcnArchName
//   ("gfx942:sramecc+:xnack-") picks it; there is no JIT from an intermediate form.
// - HSA counts the grid in work-items, 32 bits per dimension: grid.x times the block size must
//   stay below 2^32.
//
// NOT RUN ON AMD HARDWARE: this file is compiled in CI against Debian's HIP headers
// (libamdhip64-dev) and its logic checked there against a fake HIP library; docs/amd.md.
#ifndef TILEC_RUNTIME_HIP_H
#define TILEC_RUNTIME_HIP_H

// A generated header launches AMD code objects: HIP's host API for the AMD platform, unless the
// build chose a platform itself (hipcc and CMake's hip::host define it; a plain C++ compiler
// does not).
#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__)
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

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

#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

namespace tilec::hiprt {

/// Bumped when a generated header's use of this file changes incompatibly.
inline constexpr int kRuntimeVersion = 1;

/// What a generated header tells the runtime about one kernel as compiled for one image.
struct KernelSpec {
  const char *name;            // symbol in the code object
  unsigned threads;            // block size (1-D)
  unsigned dynamicSharedBytes; // LDS the launch asks for
};

/// One embedded code object, for one gfx architecture.
template <std::size_t N> struct Image {
  const char *name; // "gfx942 code object", for messages and loadedImage()
  const char *arch; // "gfx942"
  const void *data;
  std::array<KernelSpec, N> kernels;
};

/// Whether a device whose gcnArchName is `device` ("gfx942:sramecc+:xnack-") runs code objects
/// for `arch` ("gfx942"): the name before the first ':' must be the same.
inline bool archMatches(const char *device, const char *arch) {
  std::size_t i = 0;
  for (; arch[i] != '\0'; ++i)
    if (device[i] != arch[i])
      return false;
  return device[i] == '\0' || device[i] == ':';
}

// ---- Why the last launch or load failed on this thread (for logs): the hipError_t stays the
// error channel, this only adds detail. Set on every failure, never cleared by a success.

using rtcore::Grid;
using rtcore::ValueKind;
using LaunchError = rtcore::LaunchError<hipError_t>;

inline LaunchError &lastErrorSlot() { return rtcore::lastErrorSlot<hipError_t>(); }

/// The last failure on the calling thread (result hipSuccess when there was none).
inline const LaunchError &lastError() { return lastErrorSlot(); }

/// The last failure as one line, e.g. "vector_add: argument 'A' = 0x0: null pointer
/// (hipError_t 1)". The text lives in a thread-local buffer until the next call on this thread.
inline const char *lastErrorMessage() { return rtcore::lastErrorMessage<hipError_t>("hipError_t"); }

inline hipError_t fail(hipError_t r, const char *kernel, const char *argument, const char *reason,
                       ValueKind kind = ValueKind::None, std::int64_t value = 0) {
  return rtcore::fail(r, kernel, argument, reason, kind, value);
}

// ---- Argument checks (rules in runtime_core.h). Every failure is hipErrorInvalidValue:
// nothing was launched.

inline hipError_t checkTensor(hipDeviceptr_t p, std::uint64_t alignBytes, const char *kernel,
                              const char *argument) {
  const auto address = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
  if (const char *why = rtcore::tensorProblem(address, alignBytes))
    return fail(hipErrorInvalidValue, kernel, argument, why, ValueKind::Pointer,
                static_cast<std::int64_t>(address));
  return hipSuccess;
}

inline hipError_t checkDim(std::int64_t d, const char *kernel, const char *argument) {
  if (const char *why = rtcore::dimProblem(d))
    return fail(hipErrorInvalidValue, kernel, argument, why, ValueKind::Integer, d);
  return hipSuccess;
}

/// Besides the limits the kernels index by, HSA's 32-bit grid size in work-items.
inline hipError_t checkGrid(const Grid &g, unsigned threads, const char *kernel) {
  std::int64_t value = 0;
  if (const char *why = rtcore::gridProblem(g, std::int64_t{4294967295} / threads,
                                            "grid.x outside [1, 2^32 / threads)", value))
    return fail(hipErrorInvalidValue, kernel, "grid", why, ValueKind::Integer, value);
  return hipSuccess;
}

// ---- Grid arithmetic (runtime_core.h), named here for the generated grid functions.
using rtcore::floorDiv;
using rtcore::floorMod;
using rtcore::max;
using rtcore::min;
using rtcore::truncDiv;

// ---- Per-device module state.

/// Devices one header can be loaded on (device ordinals below this).
inline constexpr int kMaxDevices = 64;

/// The module of one header as loaded on one device.
template <std::size_t N> struct DeviceModule {
  /// Set last, with release, so that a launch that sees it sees the fields below complete.
  std::atomic<bool> ready{false};
  hipModule_t module = nullptr;
  std::size_t image = 0; // index into the header's images
  std::array<hipFunction_t, N> functions{};
};

template <std::size_t N> struct ModuleState {
  std::mutex mutex;
  std::array<DeviceModule<N>, kMaxDevices> devices;
};

/// The image for the current device, or `M` when none fits.
template <std::size_t N, std::size_t M>
inline hipError_t pickImage(const std::array<Image<N>, M> &images, int device,
                            std::size_t &picked) {
  hipDeviceProp_t props;
  hipError_t r = hipGetDeviceProperties(&props, device);
  if (r != hipSuccess)
    return fail(r, nullptr, nullptr, "cannot query the current device's architecture");
  for (picked = 0; picked < M; ++picked)
    if (archMatches(props.gcnArchName, images[picked].arch))
      return hipSuccess;
  return fail(hipErrorNoBinaryForGpu, nullptr, nullptr,
              "no embedded code object is for this GPU's architecture (recompile with --arch "
              "for it)");
}

/// Loads the fitting image on the current device unless it is loaded there already, and looks
/// up every kernel. A failure leaves nothing loaded for the device, so a later call can retry.
template <std::size_t N, std::size_t M>
inline hipError_t load(ModuleState<N> &state, const std::array<Image<N>, M> &images,
                       const DeviceModule<N> *&loaded) {
  int device = 0;
  if (hipError_t r = hipGetDevice(&device); r != hipSuccess)
    return fail(r, nullptr, nullptr, "no current HIP device");
  if (device < 0 || device >= kMaxDevices)
    return fail(hipErrorInvalidDevice, nullptr, nullptr, "device ordinal beyond the 64 supported",
                ValueKind::Integer, device);
  DeviceModule<N> &slot = state.devices[static_cast<std::size_t>(device)];
  loaded = &slot;
  if (slot.ready.load(std::memory_order_acquire))
    return hipSuccess;
  std::lock_guard<std::mutex> lock(state.mutex);
  if (slot.ready.load(std::memory_order_relaxed))
    return hipSuccess;
  std::size_t picked = 0;
  if (hipError_t r = pickImage(images, device, picked); r != hipSuccess)
    return r;
  hipModule_t module = nullptr;
  if (hipError_t r = hipModuleLoadData(&module, images[picked].data); r != hipSuccess)
    return fail(r, nullptr, nullptr, "hipModuleLoadData failed");
  for (std::size_t i = 0; i < N; ++i) {
    const KernelSpec &spec = images[picked].kernels[i];
    if (hipError_t r = hipModuleGetFunction(&slot.functions[i], module, spec.name);
        r != hipSuccess) {
      (void)hipModuleUnload(module);
      return fail(r, spec.name, nullptr, "cannot look up the kernel after loading");
    }
  }
  slot.module = module;
  slot.image = picked;
  slot.ready.store(true, std::memory_order_release);
  return hipSuccess;
}

/// Unloads the module from every device it was loaded on (that device current while it does),
/// then restores the calling thread's device. Must not race with launches of the same header.
template <std::size_t N> inline void unload(ModuleState<N> &state) {
  std::lock_guard<std::mutex> lock(state.mutex);
  int current = 0;
  bool restore = hipGetDevice(&current) == hipSuccess;
  for (int d = 0; d < kMaxDevices; ++d) {
    DeviceModule<N> &slot = state.devices[static_cast<std::size_t>(d)];
    if (!slot.ready.load(std::memory_order_relaxed))
      continue;
    if (hipSetDevice(d) == hipSuccess)
      (void)hipModuleUnload(slot.module);
    slot.ready.store(false, std::memory_order_relaxed);
    slot.module = nullptr;
    slot.functions = {};
  }
  if (restore)
    (void)hipSetDevice(current);
}

/// The name of the image loaded on the current device ("gfx942 code object"), or null.
template <std::size_t N, std::size_t M>
inline const char *loadedImage(const ModuleState<N> &state, const std::array<Image<N>, M> &images) {
  int device = 0;
  if (hipGetDevice(&device) != hipSuccess || device < 0 || device >= kMaxDevices)
    return nullptr;
  const DeviceModule<N> &slot = state.devices[static_cast<std::size_t>(device)];
  return slot.ready.load(std::memory_order_acquire) ? images[slot.image].name : nullptr;
}

/// Checks the grid, loads lazily on the current device, then launches kernel `index` on a 1-D
/// block of the loaded image's size.
template <std::size_t N, std::size_t M>
inline hipError_t launch(ModuleState<N> &state, const std::array<Image<N>, M> &images,
                         std::size_t index, const Grid &grid, hipStream_t stream, void **args) {
  const KernelSpec &first = images[0].kernels[index];
  if (hipError_t r = checkGrid(grid, first.threads, first.name); r != hipSuccess)
    return r;
  const DeviceModule<N> *loaded = nullptr;
  if (hipError_t r = load(state, images, loaded); r != hipSuccess) {
    lastErrorSlot().kernel = first.name;
    return r;
  }
  const KernelSpec &spec = images[loaded->image].kernels[index];
  hipError_t r =
      hipModuleLaunchKernel(loaded->functions[index], static_cast<unsigned>(grid.x),
                            static_cast<unsigned>(grid.y), static_cast<unsigned>(grid.z),
                            spec.threads, 1, 1, spec.dynamicSharedBytes, stream, args, nullptr);
  if (r != hipSuccess)
    return fail(r, first.name, nullptr, "hipModuleLaunchKernel failed");
  return hipSuccess;
}

} // namespace tilec::hiprt

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif // TILEC_RUNTIME_HIP_H
