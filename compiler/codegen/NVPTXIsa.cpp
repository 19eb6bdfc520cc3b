// The NVPTX instruction set: PTX through LLVM's NVPTX backend.
#include "codegen/Isa.h"
#include "codegen/MathLowering.h"

#include <fmt/format.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>

#include <algorithm>
#include <mutex>

namespace tilec::codegen {

namespace {

constexpr std::string_view kTriple = "nvptx64-nvidia-cuda";

void initializeNVPTX() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

bool usesSetMaxNReg(const thir::Body &body) {
  for (const thir::Stmt &s : body) {
    if (std::holds_alternative<thir::SetMaxNReg>(s.op))
      return true;
    if (auto *f = std::get_if<thir::ForStmt>(&s.op); f && usesSetMaxNReg(f->body))
      return true;
    if (auto *i = std::get_if<thir::IfStmt>(&s.op);
        i && (usesSetMaxNReg(i->then) || usesSetMaxNReg(i->otherwise)))
      return true;
  }
  return false;
}

class NVPTXIsa final : public Isa {
public:
  llvm::Triple triple() const override { return llvm::Triple(llvm::StringRef(kTriple)); }

  Result<std::unique_ptr<llvm::TargetMachine>>
  targetMachine(const TargetOptions &opts) const override {
    using R = Result<std::unique_ptr<llvm::TargetMachine>>;
    initializeNVPTX();
    llvm::Triple t = triple();
    std::string error;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t, error);
    if (!target)
      return R::failure("NVPTX target: " + error);
    std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
        t, opts.target.arch, fmt::format("+ptx{}", opts.target.ptxVersion), llvm::TargetOptions(),
        std::nullopt, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
    if (!tm)
      return R::failure("could not create the NVPTX target machine");
    return tm;
  }

  void markKernel(llvm::Function &fn, const thir::Kernel &k, const TargetOptions &) const override {
    fn.setCallingConv(llvm::CallingConv::PTX_Kernel);
    if (usesSetMaxNReg(k.body) || k.minBlocksPerSM > 0) {
      // setmaxnreg needs a known register count at entry (ptxas C7508): launch bounds that fix
      // the blocks per SM (ptxas refuses .reqntid beside .maxntid).
      fn.addFnAttr("nvvm.maxntid", fmt::format("{}", k.threads));
      fn.addFnAttr("nvvm.minctasm", fmt::format("{}", std::max(k.minBlocksPerSM, 1)));
    } else {
      fn.addFnAttr("nvvm.reqntid", fmt::format("{},1,1", k.threads));
    }
    for (size_t i = 0; i < k.params.size(); ++i) {
      if (k.params[i].kind != thir::ParamKind::TensorMap)
        continue;
      // A CUtensorMap by value in parameter space (`const __grid_constant__`): TMA reads it
      // through its generic address, which NVPTX takes with cvta.param.
      llvm::Argument *arg = fn.getArg(static_cast<unsigned>(i));
      llvm::LLVMContext &ctx = fn.getContext();
      arg->removeAttr(llvm::Attribute::NoUndef);
      arg->addAttr(llvm::Attribute::getWithByValType(
          ctx, llvm::ArrayType::get(llvm::Type::getInt8Ty(ctx), 128)));
      arg->addAttr(llvm::Attribute::getWithAlignment(ctx, llvm::Align(64)));
      arg->addAttr(llvm::Attribute::get(ctx, "nvvm.grid_constant"));
    }
  }

  // Programmatic dependent launch: the generated header launches sm_90 kernels with
  // programmatic stream serialization, so the next kernel in the stream is launched as soon as
  // every block of this one has exited, before this grid's completion and memory flush (the
  // launch overlaps that tail). Each thread first waits until the grids ahead have finished and
  // their writes are visible; without the launch attribute the wait returns at once. The kernel
  // does not trigger its dependents early (griddepcontrol.launch_dependents): their blocks would
  // then be placed while this grid still holds the SMs, all on the few SMs it leaves free, and
  // wait there (our reading of why MLA split, whose combine's 128 blocks follow a partial kernel
  // of 128 on 132 SMs, ran 14-17% slower at batch 1 with the trigger than with plain launches;
  // H100, docs/results.md 2026-12-05 night).
  void kernelEntry(llvm::IRBuilder<> &b, const TargetOptions &opts) const override {
    if (!opts.target.hasGridDependencyControl)
      return;
    b.CreateIntrinsic(llvm::Intrinsic::nvvm_griddepcontrol_wait, {});
  }

  llvm::Value *special(llvm::IRBuilder<> &b, thir::Special reg,
                       const thir::Kernel &) const override {
    using thir::Special;
    llvm::Intrinsic::ID id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x;
    switch (reg) {
    case Special::ThreadIdxX:
      id = llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x;
      break;
    case Special::BlockIdxX:
      id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x;
      break;
    case Special::BlockIdxY:
      id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_y;
      break;
    case Special::BlockIdxZ:
      id = llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_z;
      break;
    case Special::GridDimX:
      id = llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x;
      break;
    case Special::GridDimY:
      id = llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_y;
      break;
    case Special::GridDimZ:
      id = llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_z;
      break;
    }
    return math::callIntrinsic(b, id, {}, {});
  }

  void barrier(llvm::IRBuilder<> &b, const thir::Barrier &bar) const override {
    if (bar.threads == 0)
      math::callIntrinsic(b, llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_all, {},
                          {b.getInt32(bar.id)});
    else
      math::callIntrinsic(b, llvm::Intrinsic::nvvm_barrier_cta_sync_aligned_count, {},
                          {b.getInt32(bar.id), b.getInt32(bar.threads)});
  }

  llvm::Value *shuffle(llvm::IRBuilder<> &b, thir::ShflMode mode, llvm::Value *value,
                       llvm::Value *arg) const override {
    using llvm::Intrinsic::ID;
    static constexpr ID f32[] = {
        llvm::Intrinsic::nvvm_shfl_sync_bfly_f32, llvm::Intrinsic::nvvm_shfl_sync_down_f32,
        llvm::Intrinsic::nvvm_shfl_sync_up_f32, llvm::Intrinsic::nvvm_shfl_sync_idx_f32};
    static constexpr ID i32[] = {
        llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, llvm::Intrinsic::nvvm_shfl_sync_down_i32,
        llvm::Intrinsic::nvvm_shfl_sync_up_i32, llvm::Intrinsic::nvvm_shfl_sync_idx_i32};
    int m = static_cast<int>(mode);
    // The clamp operand: lanes past 31 (0 for up: lanes below 0) keep their own value.
    uint32_t c = mode == thir::ShflMode::Up ? 0 : 0x1f;
    return math::callIntrinsic(b, value->getType()->isFloatTy() ? f32[m] : i32[m], {},
                               {b.getInt32(0xffffffffu), value, arg, b.getInt32(c)});
  }
};

} // namespace

const Isa &nvptxIsa() {
  static const NVPTXIsa isa;
  return isa;
}

} // namespace tilec::codegen
