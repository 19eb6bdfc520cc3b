// Generates the self-contained C++17 launch header for a compiled module (the contract is
// "The generated header" in docs/tile-language.md): over the CUDA Driver API for NVIDIA targets,
// over HIP's module API for AMD ones (docs/amd.md).
#pragma once

#include "threadir/ThreadIR.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::driver {

enum class BinaryKind { Cubin, Ptx };

/// An integer or boolean constant of the program as compiled (after -D).
struct HeaderConstant {
  std::string name;
  bool isBool = false;
  int64_t value = 0;
};

struct HeaderOptions {
  /// C++ namespace of the header, possibly nested ("tile::gemm"); see defaultNamespace().
  std::string ns;
  /// Shown in the banner comment (the .tile file name); keep it free of absolute paths so that
  /// outputs do not depend on where the compiler ran.
  std::string sourceName;
  /// Compile-time constants of the program, emitted as `constants::NAME`.
  std::vector<HeaderConstant> constants;
};

/// `tile::<stem>`, the stem made a C++ identifier (other characters become '_', a leading digit
/// or a keyword gets a '_').
std::string defaultNamespace(std::string_view stem);

/// Whether `ns` is a valid (possibly nested, `a::b`) C++ namespace name for --namespace.
bool isValidNamespace(std::string_view ns);

/// One binary the header embeds: the module as compiled for `arch` ("sm_90a") and its cubin or
/// PTX text (a NUL is appended when embedding PTX).
struct HeaderImage {
  const thir::Module *module;
  std::string arch;
  std::string_view binary;
  BinaryKind kind;
};

/// The header text, embedding every image (the launch picks the one that fits the device). The
/// images must come from one source (same kernels and parameters). Kernel::grid entries must be
/// host-evaluable integer expressions (see ThreadIR.h); anything else, and an invalid
/// namespace, is a compiler bug and throws std::logic_error.
std::string generateHeader(const std::vector<HeaderImage> &images, const HeaderOptions &opts);

/// The C header (`--emit c-header`): the constants as macros PREFIX_constant_NAME, extern "C"
/// declarations of load, unload, last_error, and per
/// kernel its facts (enum constants, merged over the images as in the C++ header), grid and launch
/// function, named PREFIX_NAME where PREFIX is the namespace with '::' made '_'; with
/// TILEC_C_API_IMPLEMENTATION defined in C++ it also defines them over the C++ header
/// `cxxHeaderName`.
std::string generateCHeader(const std::vector<HeaderImage> &images, const HeaderOptions &opts,
                            std::string_view cxxHeaderName);

/// The launch function a header declares for kernel `k`: its name, and after the stream each
/// parameter the caller passes (C++ type, name, and the kernel parameter it is).
struct LaunchParam {
  std::string type;
  std::string name;
  const thir::Param *param;
};
struct LaunchSignature {
  std::string function;
  std::vector<LaunchParam> params;
};
LaunchSignature launchSignature(const thir::Kernel &k);

/// One variant of a tuned header: the module and binary as for generateHeader, and the namespace
/// (nested in the header's) its launch functions get.
struct DispatchVariant {
  HeaderImage image;
  std::string ns;          // an identifier, e.g. "variant0"
  std::string description; // "block_M=128 block_N=256": shown in the header
};
/// A shape the tuner measured: the symbolic dimensions' values and the variant that won there.
struct DispatchBucket {
  std::vector<std::pair<std::string, int64_t>> dims;
  size_t winner;
};
/// The header `tilec tune` writes: every winning variant as its own generated header (in
/// opts.ns::VARIANT), then in opts.ns a launch function per kernel of the same signature that
/// picks the variant of the bucket nearest to the launch's dimensions (by the sum over dimensions
/// of |log(d / bucket d)|, ties to the earlier bucket), plus load(), unload(), last_error() and
/// KERNEL_variant() (the index it picks). The variants must come from one source (the same
/// kernels and launch signatures).
std::string generateDispatchHeader(const std::vector<DispatchVariant> &variants,
                                   const std::vector<DispatchBucket> &buckets,
                                   const HeaderOptions &opts);

/// runtime/include/tilec/runtime.h as embedded at build time.
std::string_view runtimeHeaderText();

} // namespace tilec::driver
