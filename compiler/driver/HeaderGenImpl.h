// Shared by the C++ and C header generators (HeaderGen.cpp, CHeaderGen.cpp), private to driver/.
#pragma once

#include "driver/HeaderGen.h"

#include <string>
#include <string_view>
#include <vector>

namespace tilec::driver {

namespace detail {

/// The launch API a header is written against: the names of its result, stream and device
/// pointer types and the runtime, pasted into the header, that loads and launches over it. The
/// two runtimes have the same functions (load, unload, loadedImage, launch, the checks).
struct LaunchApi {
  std::string_view result, success, stream, devicePtr, rt, include, guard, name;
  std::string_view (*runtime)();
};

extern const LaunchApi kCuda, kHip;

/// HIP for AMD targets, the CUDA Driver API for NVIDIA's.
const LaunchApi &launchApiOf(std::string_view arch);
[[noreturn]] void bug(std::string what);
bool isIdentifier(std::string_view s);
/// The C++ names of a kernel's launch parameters.
std::vector<std::string> launchParamNames(const thir::Kernel &k);
std::string functionName(const thir::Kernel &k);
bool isLaunchArgument(const thir::Param &p);
bool isGridArgument(const thir::Param &p);
std::string cxxParamType(const thir::Param &p, const LaunchApi &api = kCuda);

/// Everything the header needs to say about one kernel, from every image it was compiled into.
struct KernelEntry {
  const thir::Kernel *kernel;         // from the first image (names, parameters, grid)
  std::vector<int> alignBytes;        // per parameter: the most any image assumes
  unsigned threads = 0;               // the most any image uses
  unsigned dynamicSharedBytes = 0;    // the most any image uses
  unsigned persistentBlocksPerSM = 0; // the most any image uses (0: none is persistent)
};

} // namespace detail

std::vector<detail::KernelEntry> mergeKernels(const std::vector<HeaderImage> &images);

} // namespace tilec::driver
