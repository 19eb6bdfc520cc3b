// The AMDGCN instruction set (gfx90a, gfx942): an object from LLVM's AMDGPU backend for the
// amdgcn-amd-amdhsa triple, which the driver links into a code object with ld.lld. Nothing here
// has run on AMD hardware: what is checked is the generated code (tests/lit/amdgpu).
#include "codegen/Isa.h"
#include "codegen/MathLowering.h"

#include <fmt/format.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Support/TargetSelect.h>

#include <mutex>
#include <stdexcept>

namespace tilec::codegen {

namespace {

constexpr std::string_view kTriple = "amdgcn-amd-amdhsa";

void initializeAMDGPU() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
  });
}

class AMDGPUIsa final : public Isa {
public:
  llvm::Triple triple() const override { return llvm::Triple(llvm::StringRef(kTriple)); }

  Result<std::unique_ptr<llvm::TargetMachine>>
  targetMachine(const TargetOptions &opts) const override {
    using R = Result<std::unique_ptr<llvm::TargetMachine>>;
    initializeAMDGPU();
    llvm::Triple t = triple();
    std::string error;
    const llvm::Target *target = llvm::TargetRegistry::lookupTarget(t, error);
    if (!target)
      return R::failure("AMDGPU target: " + error);
    // Code objects are position independent (the loader places them).
    std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
        t, opts.target.arch, "", llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
        llvm::CodeGenOptLevel::Aggressive));
    if (!tm)
      return R::failure("could not create the AMDGPU target machine");
    return tm;
  }

  void markKernel(llvm::Function &fn, const thir::Kernel &k, const TargetOptions &) const override {
    fn.setCallingConv(llvm::CallingConv::AMDGPU_KERNEL);
    // The launch always uses exactly k.threads work-items per workgroup (the header checks
    // nothing else is possible): the backend may assume it, as nvvm.reqntid on NVIDIA.
    fn.addFnAttr("amdgpu-flat-work-group-size", fmt::format("{},{}", k.threads, k.threads));
    fn.addFnAttr("uniform-work-group-size", "true");
  }

  llvm::Value *special(llvm::IRBuilder<> &b, thir::Special reg,
                       const thir::Kernel &k) const override {
    using thir::Special;
    switch (reg) {
    case Special::ThreadIdxX:
      return math::callIntrinsic(b, llvm::Intrinsic::amdgcn_workitem_id_x, {}, {});
    case Special::BlockIdxX:
      return math::callIntrinsic(b, llvm::Intrinsic::amdgcn_workgroup_id_x, {}, {});
    case Special::BlockIdxY:
      return math::callIntrinsic(b, llvm::Intrinsic::amdgcn_workgroup_id_y, {}, {});
    case Special::BlockIdxZ:
      return math::callIntrinsic(b, llvm::Intrinsic::amdgcn_workgroup_id_z, {}, {});
    case Special::GridDimX:
    case Special::GridDimY:
    case Special::GridDimZ: {
      // The HSA dispatch packet holds the grid in work-items (grid_size_{x,y,z}, u32 at bytes
      // 12, 16, 20); workgroups are k.threads x 1 x 1, so only x divides.
      int axis = reg == Special::GridDimX ? 0 : reg == Special::GridDimY ? 1 : 2;
      llvm::Value *packet = math::callIntrinsic(b, llvm::Intrinsic::amdgcn_dispatch_ptr, {}, {});
      llvm::Value *field = b.CreateConstInBoundsGEP1_64(b.getInt8Ty(), packet, 12 + 4 * axis);
      auto *size = b.CreateAlignedLoad(b.getInt32Ty(), field, llvm::Align(4));
      size->setMetadata(llvm::LLVMContext::MD_invariant_load,
                        llvm::MDNode::get(b.getContext(), {}));
      return axis == 0 ? b.CreateUDiv(size, b.getInt32(static_cast<uint32_t>(k.threads)), "",
                                      /*isExact=*/true)
                       : static_cast<llvm::Value *>(size);
    }
    }
    throw std::logic_error("unknown special register");
  }

  void kernelEntry(llvm::IRBuilder<> &, const TargetOptions &) const override {}

  void barrier(llvm::IRBuilder<> &b, const thir::Barrier &bar) const override {
    if (bar.threads != 0)
      throw std::logic_error("AMDGPU has no barrier of part of a workgroup");
    // __syncthreads() as HIP writes it: LDS writes before the barrier are seen by every
    // work-item of the workgroup after it.
    b.CreateFence(llvm::AtomicOrdering::Release,
                  b.getContext().getOrInsertSyncScopeID("workgroup"));
    math::callIntrinsic(b, llvm::Intrinsic::amdgcn_s_barrier, {}, {});
    b.CreateFence(llvm::AtomicOrdering::Acquire,
                  b.getContext().getOrInsertSyncScopeID("workgroup"));
  }

  llvm::Value *shuffle(llvm::IRBuilder<> &b, thir::ShflMode mode, llvm::Value *value,
                       llvm::Value *arg) const override {
    // ds_bpermute_b32 reads lane (address / 4) of the wavefront: the source lane is computed,
    // and one outside the wavefront is the lane itself, as thir::Shfl says.
    llvm::Value *lane = math::callIntrinsic(
        b, llvm::Intrinsic::amdgcn_mbcnt_hi, {},
        {b.getInt32(~0u), math::callIntrinsic(b, llvm::Intrinsic::amdgcn_mbcnt_lo, {},
                                              {b.getInt32(~0u), b.getInt32(0)})});
    llvm::Value *src = nullptr;
    switch (mode) {
    case thir::ShflMode::Xor:
      src = b.CreateXor(lane, arg);
      break;
    case thir::ShflMode::Down:
      src = b.CreateAdd(lane, arg);
      break;
    case thir::ShflMode::Up:
      src = b.CreateSub(lane, arg);
      break;
    case thir::ShflMode::Idx:
      src = arg;
      break;
    }
    // Unsigned: a negative lane is out of range too.
    src = b.CreateSelect(b.CreateICmpULT(src, b.getInt32(64)), src, lane);
    bool isFloat = value->getType()->isFloatTy();
    llvm::Value *bits = isFloat ? b.CreateBitCast(value, b.getInt32Ty()) : value;
    llvm::Value *r = math::callIntrinsic(b, llvm::Intrinsic::amdgcn_ds_bpermute, {},
                                         {b.CreateShl(src, 2), bits});
    return isFloat ? b.CreateBitCast(r, value->getType()) : r;
  }
};

} // namespace

const Isa &amdgpuIsa() {
  static const AMDGPUIsa isa;
  return isa;
}

} // namespace tilec::codegen
