// What code generation asks of the instruction set it targets. The kernel emitter writes
// target-neutral LLVM IR and asks this interface for the rest: the triple and TargetMachine,
// how a function becomes a kernel, the thread and block indices, barriers and lane shuffles.
// Internal to the codegen library.
#pragma once

#include "codegen/Codegen.h"
#include "threadir/ThreadIR.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>

#include <memory>

namespace tilec::codegen {

class Isa {
public:
  virtual ~Isa() = default;

  virtual llvm::Triple triple() const = 0;
  virtual Result<std::unique_ptr<llvm::TargetMachine>>
  targetMachine(const TargetOptions &opts) const = 0;

  /// Makes `fn` (already holding `k`'s parameters) the kernel entry point: calling convention,
  /// launch bounds and parameter attributes only this ISA has.
  virtual void markKernel(llvm::Function &fn, const thir::Kernel &k,
                          const TargetOptions &opts) const = 0;

  /// What every thread runs first, before any of the kernel's own statements.
  virtual void kernelEntry(llvm::IRBuilder<> &b, const TargetOptions &opts) const = 0;

  /// The value of a special register (Int32).
  virtual llvm::Value *special(llvm::IRBuilder<> &b, thir::Special reg,
                               const thir::Kernel &k) const = 0;

  /// A barrier of the whole block (bar.threads == 0) or of bar.threads threads on barrier bar.id.
  virtual void barrier(llvm::IRBuilder<> &b, const thir::Barrier &bar) const = 0;

  /// thir::Shfl of one 32-bit value (i32 or float) over the whole warp: the value of the lane
  /// `mode` and `arg` (Int32) name, or the thread's own where that lane is outside the warp.
  virtual llvm::Value *shuffle(llvm::IRBuilder<> &b, thir::ShflMode mode, llvm::Value *value,
                               llvm::Value *arg) const = 0;
};

const Isa &nvptxIsa();
const Isa &amdgpuIsa();

/// The instruction set of `t`.
const Isa &isaOf(const target::TargetInfo &t);

} // namespace tilec::codegen
