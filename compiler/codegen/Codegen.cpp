#include "codegen/Codegen.h"
#include "codegen/KernelEmitter.h"

#include "codegen/FuseMaskLogic.h"
#include "codegen/Isa.h"
#include "codegen/PackNibblePairs.h"

#include <fmt/format.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/OptBisect.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <stdexcept>

namespace tilec::codegen {

using detail::CodegenError;
using detail::KernelEmitter;

namespace {

/// Turns passes of LLVM's code generation pipeline off for one compilation. The gate belongs
/// to the compilation's LLVMContext, not to the process (as `-disable-lsr` would).
class CodegenPassGate final : public llvm::OptPassGate {
public:
  explicit CodegenPassGate(bool loopStrengthReduction) : lsr_(loopStrengthReduction) {}
  bool isEnabled() const override { return !lsr_; }
  bool shouldRunPass(llvm::StringRef pass, llvm::StringRef) const override {
    return lsr_ || pass != "Loop Strength Reduction";
  }

private:
  bool lsr_;
};

/// Installs `gate` on `ctx` for its lifetime, then puts the previous gate back.
class ScopedPassGate {
public:
  ScopedPassGate(llvm::LLVMContext &ctx, llvm::OptPassGate &gate)
      : ctx_(ctx), previous_(ctx.getOptPassGate()) {
    ctx_.setOptPassGate(gate);
  }
  ~ScopedPassGate() { ctx_.setOptPassGate(previous_); }
  ScopedPassGate(const ScopedPassGate &) = delete;
  ScopedPassGate &operator=(const ScopedPassGate &) = delete;

private:
  llvm::LLVMContext &ctx_;
  llvm::OptPassGate &previous_;
};

} // namespace

const Isa &isaOf(const target::TargetInfo &t) { return t.isAmd() ? amdgpuIsa() : nvptxIsa(); }

Result<std::unique_ptr<llvm::Module>> emitModule(const thir::Module &m, const TargetOptions &opts,
                                                 llvm::LLVMContext &ctx) {
  using R = Result<std::unique_ptr<llvm::Module>>;
  const Isa &isa = isaOf(opts.target);
  auto tm = isa.targetMachine(opts);
  if (!tm)
    return R::failure(tm.error());
  auto mod = std::make_unique<llvm::Module>(m.name, ctx);
  mod->setTargetTriple(isa.triple());
  if (opts.target.isAmd()) // version 5: what ROCm 5.x and 6.x runtimes both load
    mod->addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version", 500);
  mod->setDataLayout((*tm)->createDataLayout());
  try {
    for (const thir::Kernel &k : m.kernels)
      KernelEmitter(*mod, k, opts).emit();
  } catch (const CodegenError &e) {
    return R::failure(e.message);
  }
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(*mod, &os))
    throw std::logic_error("codegen produced invalid LLVM IR:\n" + problems);
  return R(std::move(mod));
}

Result<bool> optimizeModule(llvm::Module &mod, const TargetOptions &opts) {
  auto tm = isaOf(opts.target).targetMachine(opts);
  if (!tm)
    return Result<bool>::failure(tm.error());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // The SLP vectorizer pairs 16-bit float arithmetic into f16x2/bf16x2 instructions (NVPTX's
  // only vector arithmetic): dequantization and the elementwise code around 16-bit tiles run
  // two elements an instruction.
  llvm::PipelineTuningOptions tuning;
  tuning.SLPVectorization = true;
  llvm::PassBuilder pb(tm->get(), tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  // lop3.b32 is NVIDIA's; AMD's v_bfi/v_and_or forms are selected by the backend itself.
  bool lop3 = !opts.target.isAmd();
  pb.registerOptimizerLastEPCallback(
      [lop3](llvm::ModulePassManager &mpm, llvm::OptimizationLevel, llvm::ThinOrFullLTOPhase) {
        mpm.addPass(llvm::createModuleToFunctionPassAdaptor(PackNibblePairsPass()));
        if (lop3)
          mpm.addPass(llvm::createModuleToFunctionPassAdaptor(FuseMaskLogicPass()));
      });
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(mod, mam);
  return true;
}

Result<std::unique_ptr<llvm::Module>> buildModule(const thir::Module &m, const TargetOptions &opts,
                                                  llvm::LLVMContext &ctx) {
  auto mod = emitModule(m, opts, ctx);
  if (!mod)
    return mod;
  if (auto ok = optimizeModule(**mod, opts); !ok)
    return Result<std::unique_ptr<llvm::Module>>::failure(ok.error());
  return mod;
}

std::string emitLLVMText(const llvm::Module &m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  m.print(os, nullptr);
  return text;
}

namespace {

Result<std::string> emitFile(const llvm::Module &m, const TargetOptions &opts,
                             llvm::CodeGenFileType kind) {
  auto tm = isaOf(opts.target).targetMachine(opts);
  if (!tm)
    return Result<std::string>::failure(tm.error());
  // Code generation rewrites the module it runs on; work on a copy so `m` stays printable.
  std::unique_ptr<llvm::Module> copy = llvm::CloneModule(m);
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  CodegenPassGate gate(opts.loopStrengthReduction);
  ScopedPassGate scoped(copy->getContext(), gate);
  llvm::legacy::PassManager pm;
  if ((*tm)->addPassesToEmitFile(pm, os, nullptr, kind))
    return Result<std::string>::failure(
        fmt::format("the {} target cannot emit this file", opts.target.arch));
  pm.run(*copy);
  return std::string(text.str());
}

} // namespace

Result<std::string> emitAssembly(const llvm::Module &m, const TargetOptions &opts) {
  return emitFile(m, opts, llvm::CodeGenFileType::AssemblyFile);
}

Result<std::string> emitObject(const llvm::Module &m, const TargetOptions &opts) {
  return emitFile(m, opts, llvm::CodeGenFileType::ObjectFile);
}

} // namespace tilec::codegen
