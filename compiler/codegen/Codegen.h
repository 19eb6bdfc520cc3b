// Thread IR -> LLVM IR -> PTX (NVPTX) or an AMDGPU object, in process through LLVM's
// TargetMachine for the target.
#pragma once

#include "target/TargetInfo.h"
#include "threadir/ThreadIR.h"

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace tilec::codegen {

/// A value or the message saying why there is none. The messages are user-facing
/// ("not supported yet: exp on float64"); compiler bugs throw std::logic_error instead.
template <class T> class Result {
public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  static Result failure(std::string message) {
    Result r;
    r.v_.template emplace<1>(std::move(message));
    return r;
  }
  explicit operator bool() const { return v_.index() == 0; }
  T &operator*() { return std::get<0>(v_); }
  const T &operator*() const { return std::get<0>(v_); }
  T *operator->() { return &std::get<0>(v_); }
  const T *operator->() const { return &std::get<0>(v_); }
  const std::string &error() const { return std::get<1>(v_); }

private:
  Result() = default;
  std::variant<T, std::string> v_;
};

struct TargetOptions {
  /// The GPU to generate code for (its arch name, PTX ISA version, shared-memory alignment).
  target::TargetInfo target = target::defaultTarget();
  /// Use the hardware approximations where they are much less accurate than the defaults:
  /// tanh and sigmoid by tanh.approx.f32 (rel. error ~2^-11); the defaults are accurate to
  /// ~1e-6; exp and exp2 flush subnormal results to 0 (`tilec compile --fast-math`).
  bool fastMath = false;
  /// float32 `/` as IEEE division (div.rn.f32, with its slow path) instead of div.full.f32
  /// (at most 2 ulp, full range): `tilec compile --precise-div`.
  bool preciseDiv = false;
  /// float32/float16 `a * b + c` may be one fused multiply-add (one rounding instead of two),
  /// as nvcc's default `--fmad=true`: `tilec compile --no-fma` keeps every operation rounded.
  bool fuseMultiplyAdd = true;
  /// Run LLVM's loop strength reduction. Off by default: it turns every address of a pipelined
  /// loop's copies into its own 64-bit induction variable (25 in gemm_relu), which then spills
  /// the accumulators; recomputing addresses from the loop counter is cheaper than spilling.
  bool loopStrengthReduction = false;
};

/// Builds the LLVM module for every kernel of `m` (one `ptx_kernel` function each; parameters in
/// Kernel::params order: Tensor -> `ptr addrspace(1) noundef align N`, Scalar -> its type
/// (float16/bfloat16 as half/bfloat, bool as i8), Dim -> i64) and optimizes it at O3.
///
/// Math lowering, per element (float16/bfloat16 compute in float32 and round back):
/// exp2(x) -> ex2.approx.ftz.f32(x/2) squared (ex2.approx.ftz.f32(x) alone under fastMath, or
/// where the result is added to a constant that absorbs subnormals), exp(x) -> exp2(x*log2(e)),
/// log2 -> lg2.approx.f32, log -> lg2*ln(2),
/// sqrt -> sqrt.rn, rsqrt -> rsqrt.approx, tanh and erf -> polynomial/exp formulas accurate to
/// ~1e-6 relative, sigmoid -> 1/(1+exp(-x)), pow(a, b) -> ex2(b*lg2(|a|)) with the sign fixed
/// for a < 0 and odd integral b, NaN for a < 0 and non-integral b, 1 for b == 0 (so relative error
/// grows like |b*log2(a)| * 2^-22). float64 supports arithmetic, sqrt, rsqrt, abs, floor, ceil;
/// the transcendental ones report "not supported yet". float8 values can be loaded, stored and
/// moved but not computed with or cast yet.
Result<std::unique_ptr<llvm::Module>> buildModule(const thir::Module &m, const TargetOptions &opts,
                                                  llvm::LLVMContext &ctx);

/// The two halves of buildModule, for a pipeline that shows the IR in between: the verified,
/// unoptimized module, and LLVM's O3 pipeline run on it.
Result<std::unique_ptr<llvm::Module>> emitModule(const thir::Module &m, const TargetOptions &opts,
                                                 llvm::LLVMContext &ctx);
Result<bool> optimizeModule(llvm::Module &m, const TargetOptions &opts);

/// Textual LLVM IR (.ll).
std::string emitLLVMText(const llvm::Module &m);

/// The target's assembly text for `m` (which must come from buildModule with the same options):
/// PTX for NVIDIA, AMDGCN assembly for AMD. `m` is cloned, not changed.
Result<std::string> emitAssembly(const llvm::Module &m, const TargetOptions &opts);

/// The relocatable ELF object for `m` (AMD targets: what ld.lld links into a code object).
Result<std::string> emitObject(const llvm::Module &m, const TargetOptions &opts);

} // namespace tilec::codegen
