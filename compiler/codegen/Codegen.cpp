#include "codegen/Codegen.h"

#include "codegen/FuseMaskLogic.h"
#include "codegen/Isa.h"
#include "codegen/MathLowering.h"
#include "codegen/PackNibblePairs.h"
#include "threadir/TrailingZeros.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <llvm/Analysis/CGSCCPassManager.h>
#include <llvm/Analysis/LoopAnalysisManager.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/OptBisect.h>
#include <llvm/IR/ValueMap.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace tilec::codegen {

using llvm::Value;
using thir::Expr;
using thir::Node;

namespace {

// A user-facing failure deep inside expression codegen; buildModule turns it into a Result.
struct CodegenError {
  std::string message;
};

[[noreturn]] void unsupported(std::string what) {
  throw CodegenError{fmt::format("not supported yet: {}", what)};
}

[[noreturn]] void bug(std::string what) {
  throw std::logic_error(fmt::format("codegen: malformed thread IR: {}", what));
}

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

bool isHalfLike(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

std::string_view unOpName(thir::UnOp op) {
  using thir::UnOp;
  switch (op) {
  case UnOp::Neg:
    return "neg";
  case UnOp::Not:
    return "not";
  case UnOp::Abs:
    return "abs";
  case UnOp::Exp:
    return "exp";
  case UnOp::Exp2:
    return "exp2";
  case UnOp::Log:
    return "log";
  case UnOp::Log2:
    return "log2";
  case UnOp::Sqrt:
    return "sqrt";
  case UnOp::Rsqrt:
    return "rsqrt";
  case UnOp::Tanh:
    return "tanh";
  case UnOp::Erf:
    return "erf";
  case UnOp::Sigmoid:
    return "sigmoid";
  case UnOp::Floor:
    return "floor";
  case UnOp::Ceil:
    return "ceil";
  case UnOp::BitNot:
    return "bitnot";
  }
  return "?";
}

/// Emits one kernel. Expression trees may share subtrees; within one statement all of its
/// expressions land in one basic block and see the same variable values, so each node is emitted
/// once per statement (the cache is cleared between statements).
class KernelEmitter {
public:
  KernelEmitter(llvm::Module &mod, const thir::Kernel &k, const TargetOptions &opts)
      : mod_(mod), ctx_(mod.getContext()), k_(k), opts_(opts), isa_(isaOf(opts.target)), b_(ctx_) {}

  void emit() {
    std::vector<llvm::Type *> paramTypes;
    for (const thir::Param &p : k_.params)
      paramTypes.push_back(paramType(p));
    auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), paramTypes, false);
    if (mod_.getFunction(k_.name))
      bug(fmt::format("two kernels named '{}'", k_.name));
    fn_ = llvm::Function::Create(fnTy, llvm::GlobalValue::ExternalLinkage, k_.name, mod_);
    fn_->addFnAttr(llvm::Attribute::NoUnwind);
    if (k_.threads < 1 || k_.threads > opts_.target.maxThreadsPerBlock)
      bug(fmt::format("block size {} outside 1..{}", k_.threads, opts_.target.maxThreadsPerBlock));
    for (size_t i = 0; i < k_.params.size(); ++i) {
      const thir::Param &p = k_.params[i];
      llvm::Argument *arg = fn_->getArg(static_cast<unsigned>(i));
      arg->setName(p.name);
      arg->addAttr(llvm::Attribute::NoUndef);
      if (p.kind == thir::ParamKind::Tensor && p.alignBytes > 1)
        arg->addAttr(llvm::Attribute::getWithAlignment(ctx_, llvm::Align(p.alignBytes)));
    }
    isa_.markKernel(*fn_, k_, opts_);

    auto *entry = llvm::BasicBlock::Create(ctx_, "entry", fn_);
    b_.SetInsertPoint(entry);
    isa_.kernelEntry(b_, opts_);
    declareVars(k_.body);
    body(k_.body);
    b_.CreateRetVoid();
    attachSharedAliasScopes();
  }

private:
  // ---- Types ----------------------------------------------------------------------------
  llvm::Type *scalarType(DType t) {
    switch (t) {
    case DType::Bool:
      return b_.getInt1Ty();
    case DType::Int8:
    case DType::UInt8:
    case DType::Float8E4M3:
    case DType::Float8E5M2:
      return b_.getInt8Ty();
    case DType::Int16:
      return b_.getInt16Ty();
    case DType::Int32:
    case DType::UInt32:
      return b_.getInt32Ty();
    case DType::Int64:
      return b_.getInt64Ty();
    case DType::Float16:
      return b_.getHalfTy();
    case DType::BFloat16:
      return b_.getBFloatTy();
    case DType::Float32:
      return b_.getFloatTy();
    case DType::Float64:
      return b_.getDoubleTy();
    }
    bug("unknown dtype");
  }
  // Bool lives in memory as one byte.
  llvm::Type *memType(DType t) { return t == DType::Bool ? b_.getInt8Ty() : scalarType(t); }
  llvm::Type *vec(llvm::Type *elem, int lanes) {
    return lanes == 1 ? elem : llvm::FixedVectorType::get(elem, lanes);
  }
  llvm::Type *valueType(thir::Type t) { return vec(scalarType(t.elem), t.lanes); }

  llvm::Type *tensorMapType() { return llvm::ArrayType::get(b_.getInt8Ty(), 128); }
  llvm::Type *paramType(const thir::Param &p) {
    switch (p.kind) {
    case thir::ParamKind::Tensor:
      return b_.getPtrTy(/*AddrSpace=*/1);
    case thir::ParamKind::Scalar:
      return memType(p.dtype);
    case thir::ParamKind::Dim:
      return b_.getInt64Ty();
    case thir::ParamKind::TensorMap:
      return b_.getPtrTy();
    case thir::ParamKind::TmaEnabled:
      return b_.getInt32Ty();
    }
    bug("unknown param kind");
  }

  const thir::Param &paramAt(int index) {
    if (index < 0 || static_cast<size_t>(index) >= k_.params.size())
      bug(fmt::format("parameter index {} out of range", index));
    return k_.params[index];
  }

  // ---- Variables --------------------------------------------------------------------------
  struct VarSlot {
    llvm::AllocaInst *alloca;
    thir::Type type;
  };

  // All allocas go to the entry block up front, in order of first declaration, so mem2reg
  // promotes them and the output does not depend on traversal details.
  void declareVar(int id, thir::Type t) {
    auto [it, inserted] = vars_.try_emplace(id, VarSlot{nullptr, t});
    if (!inserted) {
      if (!(it->second.type == t))
        bug(fmt::format("variable v{} declared with two types", id));
      return;
    }
    it->second.alloca = b_.CreateAlloca(valueType(t), nullptr, fmt::format("v{}", id));
  }
  void declareVars(const thir::Body &body) {
    for (const thir::Stmt &s : body) {
      if (auto *d = std::get_if<thir::DeclVar>(&s.op)) {
        declareVar(d->id, d->type);
      } else if (auto *f = std::get_if<thir::ForStmt>(&s.op)) {
        declareVar(f->var, f->varType);
        declareVars(f->body);
      } else if (auto *i = std::get_if<thir::IfStmt>(&s.op)) {
        declareVars(i->then);
        declareVars(i->otherwise);
      }
    }
  }
  const VarSlot &slot(int id) {
    auto it = vars_.find(id);
    if (it == vars_.end())
      bug(fmt::format("variable v{} used but never declared", id));
    return it->second;
  }
  void storeVar(int id, Value *v, thir::Type t) {
    const VarSlot &s = slot(id);
    if (!(s.type == t))
      bug(fmt::format("v{} assigned a {} value", id, thir::typeString(t)));
    b_.CreateStore(v, s.alloca);
  }

  // ---- Statements -------------------------------------------------------------------------
  void body(const thir::Body &body) {
    for (const thir::Stmt &s : body) {
      cache_.clear();
      std::visit(
          [&](const auto &op) {
            requireIsaHas<std::decay_t<decltype(op)>>();
            stmt(op);
          },
          s.op);
    }
    cache_.clear();
  }

  // The thread IR operations that need an instruction some targets lack: its name, and whether
  // opts_.target has it. Lowering asks the same TargetInfo features before it produces them; a
  // thread IR file may still hold them.
  template <class Op> static constexpr std::string_view instructionName() {
    using namespace thir;
    if constexpr (std::is_same_v<Op, CpAsync> || std::is_same_v<Op, CpAsyncCommit> ||
                  std::is_same_v<Op, CpAsyncWait>)
      return "cp.async";
    else if constexpr (std::is_same_v<Op, MbarrierInit> || std::is_same_v<Op, MbarrierArrive> ||
                       std::is_same_v<Op, MbarrierWait> || std::is_same_v<Op, FenceMbarrierInit>)
      return "mbarriers";
    else if constexpr (std::is_same_v<Op, TmaLoad>)
      return "TMA";
    else if constexpr (std::is_same_v<Op, FenceProxyAsync>)
      return "async-proxy fences";
    else if constexpr (std::is_same_v<Op, FenceCta>)
      return "fence.acq_rel.cta";
    else if constexpr (std::is_same_v<Op, SetMaxNReg>)
      return "setmaxnreg";
    else if constexpr (std::is_same_v<Op, Wgmma> || std::is_same_v<Op, WgmmaWait> ||
                       std::is_same_v<Op, WarpgroupTurn>)
      return "wgmma";
    else if constexpr (std::is_same_v<Op, SharedAddress>)
      return "shared-window addresses";
    else if constexpr (std::is_same_v<Op, LdMatrix>)
      return "ldmatrix";
    else if constexpr (std::is_same_v<Op, MmaSync>)
      return "mma.sync";
    else if constexpr (std::is_same_v<Op, Mfma>)
      return "mfma";
    else if constexpr (std::is_same_v<Op, Printf>)
      return "print";
    else
      return {};
  }
  template <class Op> bool targetHas() const {
    using namespace thir;
    const target::TargetInfo &t = opts_.target;
    if constexpr (std::is_same_v<Op, CpAsync> || std::is_same_v<Op, CpAsyncCommit> ||
                  std::is_same_v<Op, CpAsyncWait>)
      return t.hasCpAsync;
    else if constexpr (std::is_same_v<Op, TmaLoad>)
      return t.hasTma;
    else if constexpr (std::is_same_v<Op, FenceProxyAsync>)
      return t.hasAsyncProxyFence;
    else if constexpr (std::is_same_v<Op, SetMaxNReg>)
      return t.hasSetmaxnreg;
    else if constexpr (std::is_same_v<Op, Wgmma> || std::is_same_v<Op, WgmmaWait> ||
                       std::is_same_v<Op, WarpgroupTurn>)
      return t.hasWgmma;
    else if constexpr (std::is_same_v<Op, LdMatrix> || std::is_same_v<Op, MmaSync>)
      return !t.mmaSyncShapes.empty();
    else if constexpr (std::is_same_v<Op, Mfma>)
      return !t.mfmaShapes.empty();
    else if constexpr (std::is_same_v<Op, Printf>)
      return t.hasDevicePrintf;
    else // mbarriers, fence.acq_rel.cta and shared-window addresses: every NVIDIA target (sm_80+)
      return t.isa == target::Isa::Ptx;
  }
  template <class Op> void requireIsaHas() {
    if constexpr (!instructionName<Op>().empty())
      if (!targetHas<Op>())
        unsupported(fmt::format("{} on {}", instructionName<Op>(), opts_.target.arch));
  }

  void stmt(const thir::DeclVar &d) { storeVar(d.id, expr(d.init), d.init->type); }
  void stmt(const thir::AssignVar &a) { storeVar(a.id, expr(a.value), a.value->type); }

  void stmt(const thir::GlobalStore &s) {
    const thir::Param &p = paramAt(s.param);
    if (p.kind != thir::ParamKind::Tensor || p.dtype != s.value->type.elem)
      bug(fmt::format("store of {} into parameter '{}'", thir::typeString(s.value->type), p.name));
    Value *v = expr(s.value);
    if (p.dtype == DType::Bool)
      v = b_.CreateZExt(v, vec(b_.getInt8Ty(), s.value->type.lanes));
    b_.CreateAlignedStore(v, address(s.param, s.index), alignOf(s.alignBytes));
  }

  void stmt(const thir::CpAsync &c) {
    Value *global = b_.CreatePtrToInt(address(c.param, c.index), b_.getInt64Ty());
    Value *shared = b_.CreatePtrToInt(sharedAddress(c.byteOffset), b_.getInt32Ty());
    if (c.srcBytes) {
      auto *fnTy = llvm::FunctionType::get(
          b_.getVoidTy(), {b_.getInt32Ty(), b_.getInt64Ty(), b_.getInt32Ty()}, false);
      b_.CreateCall(llvm::InlineAsm::get(fnTy, "cp.async.cg.shared.global [$0], [$1], 16, $2;",
                                         "r,l,r,~{memory}", true),
                    {shared, global, expr(c.srcBytes)});
      return;
    }
    auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), {b_.getInt32Ty(), b_.getInt64Ty()}, false);
    b_.CreateCall(llvm::InlineAsm::get(fnTy, "cp.async.cg.shared.global [$0], [$1], 16;",
                                       "r,l,~{memory}", true),
                  {shared, global});
  }
  void stmt(const thir::CpAsyncCommit &) {
    auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), false);
    b_.CreateCall(llvm::InlineAsm::get(fnTy, "cp.async.commit_group;", "~{memory}", true));
  }
  void stmt(const thir::CpAsyncWait &w) {
    auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), false);
    b_.CreateCall(llvm::InlineAsm::get(fnTy, fmt::format("cp.async.wait_group {};", w.pending),
                                       "~{memory}", true));
  }

  void stmt(const thir::Printf &p) {
    // vprintf(format, args): the arguments packed in a local buffer, each naturally aligned, as
    // C's default argument promotions would pass them.
    std::vector<llvm::Type *> types;
    std::vector<Value *> values;
    for (const Expr &a : p.args) {
      if (a->type.lanes != 1)
        bug("printf of a vector");
      Value *v = expr(a);
      DType t = a->type.elem;
      if (isFloat(t))
        v = b_.CreateFPExt(v, b_.getDoubleTy());
      else if (t == DType::Bool)
        v = b_.CreateZExt(v, b_.getInt32Ty());
      else if (dtypeBits(t) < 32)
        v = b_.CreateSExt(v, b_.getInt32Ty());
      types.push_back(v->getType());
      values.push_back(v);
    }
    auto *ptr = b_.getPtrTy(0);
    Value *args = llvm::ConstantPointerNull::get(ptr);
    if (!values.empty()) {
      auto *st = llvm::StructType::get(ctx_, types);
      llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
      llvm::AllocaInst *buf = entry.CreateAlloca(st, nullptr, "printf.args");
      for (unsigned i = 0; i < values.size(); ++i)
        b_.CreateStore(values[i], b_.CreateStructGEP(st, buf, i));
      args = b_.CreatePointerBitCastOrAddrSpaceCast(buf, ptr);
    }
    llvm::GlobalVariable *format = b_.CreateGlobalString(p.format, "printf.format", 1, &mod_);
    llvm::FunctionCallee vprintf = mod_.getOrInsertFunction(
        "vprintf", llvm::FunctionType::get(b_.getInt32Ty(), {ptr, ptr}, false));
    b_.CreateCall(vprintf, {b_.CreateAddrSpaceCast(format, ptr), args});
  }

  static llvm::AtomicRMWInst::BinOp atomicRMW(AtomicOp op, DType t) {
    switch (op) {
    case AtomicOp::Add:
      return isFloat(t) ? llvm::AtomicRMWInst::FAdd : llvm::AtomicRMWInst::Add;
    // Floats as fmax/fmin (a NaN operand loses to a number); where the GPU has no such atom,
    // LLVM expands it to a compare-and-swap loop.
    case AtomicOp::Max:
      return isFloat(t)    ? llvm::AtomicRMWInst::FMax
             : isSigned(t) ? llvm::AtomicRMWInst::Max
                           : llvm::AtomicRMWInst::UMax;
    case AtomicOp::Min:
      return isFloat(t)    ? llvm::AtomicRMWInst::FMin
             : isSigned(t) ? llvm::AtomicRMWInst::Min
                           : llvm::AtomicRMWInst::UMin;
    }
    throw std::logic_error("codegen: an atomic operation without an instruction");
  }

  void stmt(const thir::GlobalAtomic &s) {
    const thir::Param &p = paramAt(s.param);
    if (p.kind != thir::ParamKind::Tensor || !(s.value->type == thir::Type{p.dtype, 1}) ||
        p.dtype == DType::Bool)
      bug(fmt::format("atomic {} of {} into parameter '{}'", atomicOpName(s.op),
                      thir::typeString(s.value->type), p.name));
    b_.CreateAtomicRMW(atomicRMW(s.op, p.dtype), address(s.param, s.index), expr(s.value),
                       llvm::Align(dtypeBytes(p.dtype)), llvm::AtomicOrdering::Monotonic);
  }

  void stmt(const thir::SharedAtomic &s) {
    DType t = s.value->type.elem;
    b_.CreateAtomicRMW(atomicRMW(s.op, t), sharedAddress(s.byteOffset), expr(s.value),
                       llvm::Align(dtypeBytes(t)), llvm::AtomicOrdering::Monotonic);
  }

  void stmt(const thir::IfStmt &s) {
    Value *cond = expr(s.cond);
    if (!(s.cond->type == thir::Type{DType::Bool, 1}))
      bug("if condition is not a scalar bool");
    auto *thenBB = llvm::BasicBlock::Create(ctx_, "if.then", fn_);
    auto *elseBB = s.otherwise.empty() ? nullptr : llvm::BasicBlock::Create(ctx_, "if.else", fn_);
    auto *endBB = llvm::BasicBlock::Create(ctx_, "if.end", fn_);
    b_.CreateCondBr(cond, thenBB, elseBB ? elseBB : endBB);
    b_.SetInsertPoint(thenBB);
    body(s.then);
    b_.CreateBr(endBB);
    if (elseBB) {
      b_.SetInsertPoint(elseBB);
      body(s.otherwise);
      b_.CreateBr(endBB);
    }
    b_.SetInsertPoint(endBB);
  }

  void stmt(const thir::ForStmt &s) {
    thir::Type t = s.varType;
    if (t.lanes != 1 || (t.elem != DType::Int32 && t.elem != DType::Int64))
      bug("loop variable is not int32 or int64");
    storeVar(s.var, expr(s.begin), s.begin->type);
    auto *condBB = llvm::BasicBlock::Create(ctx_, "for.cond", fn_);
    auto *bodyBB = llvm::BasicBlock::Create(ctx_, "for.body", fn_);
    auto *endBB = llvm::BasicBlock::Create(ctx_, "for.end", fn_);
    b_.CreateBr(condBB);

    b_.SetInsertPoint(condBB);
    cache_.clear();
    Value *iv = b_.CreateLoad(valueType(t), slot(s.var).alloca);
    if (!(s.end->type == t) || !(s.step->type == t))
      bug("loop bounds differ in type from the loop variable");
    b_.CreateCondBr(b_.CreateICmpSLT(iv, expr(s.end)), bodyBB, endBB);

    b_.SetInsertPoint(bodyBB);
    body(s.body);
    Value *cur = b_.CreateLoad(valueType(t), slot(s.var).alloca);
    b_.CreateStore(b_.CreateAdd(cur, expr(s.step)), slot(s.var).alloca);
    cache_.clear();
    llvm::BranchInst *latch = b_.CreateBr(condBB);
    if (s.unroll || s.unrollCount > 1) {
      llvm::MDNode *hint =
          s.unroll ? llvm::MDNode::get(ctx_, llvm::MDString::get(ctx_, "llvm.loop.unroll.full"))
                   : llvm::MDNode::get(ctx_,
                                       {llvm::MDString::get(ctx_, "llvm.loop.unroll.count"),
                                        llvm::ConstantAsMetadata::get(b_.getInt32(s.unrollCount))});
      llvm::MDNode *loopID = llvm::MDNode::getDistinct(ctx_, {nullptr, hint});
      loopID->replaceOperandWith(0, loopID);
      latch->setMetadata(llvm::LLVMContext::MD_loop, loopID);
    }
    b_.SetInsertPoint(endBB);
  }

  static llvm::Align naturalAlign(thir::Type t) {
    return llvm::Align(std::min(16, dtypeBytes(t.elem) * t.lanes));
  }

  /// The alignment a shared access may claim: its type's, or more where every thread's offset
  /// is a known multiple (dynamic shared memory starts on TargetInfo::sharedBufferAlign). The
  /// load/store vectorizer merges a run of element accesses only from an aligned first one.
  llvm::Align sharedAlign(const Expr &byteOffset, thir::Type t) {
    int tz = std::min(trailingZeros_.of(byteOffset), 4);
    return std::max(naturalAlign(t), llvm::Align(uint64_t{1} << tz));
  }

  void stmt(const thir::SharedStore &s) {
    auto *store = b_.CreateAlignedStore(expr(s.value), sharedAddress(s.byteOffset),
                                        sharedAlign(s.byteOffset, s.value->type));
    noteRegion(store, s.region);
  }

  void noteRegion(llvm::Instruction *access, const std::optional<thir::SmemRegion> &region) {
    if (region)
      regionAccesses_.emplace_back(access, *region);
  }

  /// Every shared access lowering placed in a region gets that region's alias scope and is
  /// marked as not aliasing the regions disjoint from it. All buffers are offsets into one
  /// extern array, so without this LLVM must assume a store to one buffer may change any other:
  /// it reloads a value after every store to another buffer, and the load/store vectorizer stops
  /// at such loads. Regions that overlap (buffers sharing bytes) keep aliasing each other.
  void attachSharedAliasScopes() {
    if (regionAccesses_.empty())
      return;
    llvm::MDBuilder mdb(ctx_);
    llvm::MDNode *domain = mdb.createAliasScopeDomain(k_.name + ".smem");
    std::vector<thir::SmemRegion> regions;
    std::vector<llvm::MDNode *> scopes;
    auto indexOf = [&](const thir::SmemRegion &r) {
      auto it = std::find(regions.begin(), regions.end(), r);
      if (it != regions.end())
        return static_cast<size_t>(it - regions.begin());
      regions.push_back(r);
      scopes.push_back(mdb.createAliasScope(fmt::format("smem[{}, {})", r.begin, r.end), domain));
      return regions.size() - 1;
    };
    std::vector<size_t> regionOf;
    for (const auto &[access, region] : regionAccesses_)
      regionOf.push_back(indexOf(region));
    std::vector<llvm::MDNode *> scopeLists, noaliasLists;
    for (size_t r = 0; r < regions.size(); ++r) {
      std::vector<llvm::Metadata *> disjoint;
      for (size_t q = 0; q < regions.size(); ++q)
        if (regions[q].end <= regions[r].begin || regions[r].end <= regions[q].begin)
          disjoint.push_back(scopes[q]);
      scopeLists.push_back(llvm::MDNode::get(ctx_, {scopes[r]}));
      noaliasLists.push_back(disjoint.empty() ? nullptr : llvm::MDNode::get(ctx_, disjoint));
    }
    for (size_t i = 0; i < regionAccesses_.size(); ++i) {
      llvm::Instruction *access = regionAccesses_[i].first;
      access->setMetadata(llvm::LLVMContext::MD_alias_scope, scopeLists[regionOf[i]]);
      if (noaliasLists[regionOf[i]])
        access->setMetadata(llvm::LLVMContext::MD_noalias, noaliasLists[regionOf[i]]);
    }
  }

  /// The module's dynamic shared memory (one extern array that every kernel uses from 0).
  Value *sharedAddress(const Expr &byteOffset) {
    if (!(byteOffset->type == thir::Type{DType::Int32, 1}))
      bug("shared offset is not int32");
    if (k_.dynamicSharedBytes <= 0)
      bug("shared access in a kernel without dynamic shared memory");
    if (!smem_) {
      smem_ = mod_.getGlobalVariable("tilec_smem");
      if (!smem_) {
        auto *ty = llvm::ArrayType::get(b_.getInt8Ty(), 0);
        smem_ =
            new llvm::GlobalVariable(mod_, ty, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                     "tilec_smem", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
        // The period of the 128-byte swizzle, so that swizzled tiles start on it.
        smem_->setAlignment(llvm::Align(opts_.target.sharedBufferAlign));
      }
    }
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), smem_, expr(byteOffset));
  }

  void stmt(const thir::FenceProxyAsync &) {
    auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), false);
    b_.CreateCall(llvm::InlineAsm::get(fnTy, "fence.proxy.async.shared::cta;", "~{memory}", true));
  }

  void stmt(const thir::FenceCta &) {
    auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), false);
    b_.CreateCall(llvm::InlineAsm::get(fnTy, "fence.acq_rel.cta;", "~{memory}", true));
  }

  void stmt(const thir::Barrier &bar) {
    if (bar.threads != 0 && !opts_.target.hasNamedBarriers)
      unsupported(fmt::format("a barrier of part of a block on {}", opts_.target.arch));
    isa_.barrier(b_, bar);
  }

  // ---- mbarriers, TMA, register reallocation ---------------------------------------------
  // Inline PTX, as for cp.async: each is one instruction with memory effects the optimizer must
  // keep in place, with the shared operands as 32-bit shared-window addresses.
  void asmStmt(const std::string &text, const std::string &constraints, std::vector<Value *> args) {
    std::vector<llvm::Type *> types;
    for (Value *a : args)
      types.push_back(a->getType());
    auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), types, false);
    b_.CreateCall(llvm::InlineAsm::get(fnTy, text, constraints + "~{memory}", true), args);
  }
  Value *sharedWindow(const Expr &byteOffset) {
    return b_.CreatePtrToInt(sharedAddress(byteOffset), b_.getInt32Ty());
  }
  void stmt(const thir::MbarrierInit &m) {
    asmStmt("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,",
            {sharedWindow(m.byteOffset), expr(m.count)});
  }
  void stmt(const thir::MbarrierArrive &m) {
    if (m.txBytes)
      asmStmt("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,",
              {sharedWindow(m.byteOffset), expr(m.txBytes)});
    else
      asmStmt("mbarrier.arrive.shared::cta.b64 _, [$0];", "r,", {sharedWindow(m.byteOffset)});
  }
  void stmt(const thir::MbarrierWait &m) {
    // try_wait may return false after a time limit: loop until the phase completed. Labels
    // inside a PTX { } block are local to it, so the block can appear many times.
    asmStmt("{\n.reg .pred tilec_p;\ntilec_wait:\n"
            "mbarrier.try_wait.parity.shared::cta.b64 tilec_p, [$0], $1;\n"
            "@!tilec_p bra tilec_wait;\n}",
            "r,r,", {sharedWindow(m.byteOffset), expr(m.parity)});
  }
  // This warpgroup's and the other's barrier of a ping-pong turn (thir::WarpgroupTurn).
  std::pair<Value *, Value *> turnBarriers(int barrier) {
    Value *tid = math::callIntrinsic(b_, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
    Value *w = b_.CreateAnd(b_.CreateLShr(tid, 7), 1);
    return {b_.CreateAdd(b_.getInt32(barrier), w), b_.CreateSub(b_.getInt32(barrier + 1), w)};
  }
  void stmt(const thir::WarpgroupTurn &t) {
    auto [own, other] = turnBarriers(t.barrier);
    if (t.pass)
      asmStmt("bar.arrive $0, 256;", "r,", {other});
    else
      asmStmt("bar.sync $0, 256;", "r,", {own});
  }
  void stmt(const thir::FenceMbarrierInit &) {
    asmStmt("fence.mbarrier_init.release.cluster;", "", {});
  }
  void stmt(const thir::TmaLoad &t) {
    const thir::Param &p = paramAt(t.map);
    if (p.kind != thir::ParamKind::TensorMap || t.coords.size() != p.map.box.size())
      bug(fmt::format("tma load through parameter '{}'", p.name));
    std::vector<Value *> args = {
        sharedWindow(t.byteOffset),
        b_.CreatePtrToInt(fn_->getArg(static_cast<unsigned>(t.map)), b_.getInt64Ty())};
    std::string coords, constraints = "r,l,";
    for (size_t i = 0; i < t.coords.size(); ++i) {
      coords += fmt::format("{}${}", i ? ", " : "", i + 2);
      constraints += "r,";
      args.push_back(expr(t.coords[i]));
    }
    args.push_back(sharedWindow(t.barOffset));
    constraints += "r,";
    asmStmt(fmt::format("cp.async.bulk.tensor.{}d.shared::cluster.global.tile.mbarrier::complete_"
                        "tx::bytes [$0], [$1, {{{}}}], [${}];",
                        t.coords.size(), coords, t.coords.size() + 2),
            constraints, std::move(args));
  }
  void stmt(const thir::SetMaxNReg &r) {
    math::callIntrinsic(b_,
                        r.increase ? llvm::Intrinsic::nvvm_setmaxnreg_inc_sync_aligned_u32
                                   : llvm::Intrinsic::nvvm_setmaxnreg_dec_sync_aligned_u32,
                        {}, {b_.getInt32(r.regs)});
  }
  void stmt(const thir::WgmmaWait &w) {
    // The accumulators are tied through the wait, so that their reads stay below it.
    std::vector<llvm::Type *> tys(w.vars.size(), b_.getFloatTy());
    std::vector<Value *> args;
    std::string constraints;
    for (size_t i = 0; i < w.vars.size(); ++i)
      constraints += fmt::format("{}=f", i ? "," : "");
    for (size_t i = 0; i < w.vars.size(); ++i) {
      constraints += fmt::format(",{}", i);
      args.push_back(b_.CreateLoad(b_.getFloatTy(), slot(w.vars[i]).alloca));
    }
    constraints += w.vars.empty() ? "~{memory}" : ",~{memory}";
    llvm::Type *retTy = w.vars.empty()       ? b_.getVoidTy()
                        : w.vars.size() == 1 ? tys[0]
                                             : llvm::StructType::get(ctx_, tys);
    auto *fnTy = llvm::FunctionType::get(retTy, tys, false);
    Value *r = b_.CreateCall(
        llvm::InlineAsm::get(fnTy, fmt::format("wgmma.wait_group.sync.aligned {};", w.pending),
                             constraints, true),
        args);
    for (size_t i = 0; i < w.vars.size(); ++i)
      storeVar(w.vars[i], w.vars.size() == 1 ? r : b_.CreateExtractValue(r, unsigned(i)),
               thir::Type{DType::Float32, 1});
  }

  // ---- Expressions ------------------------------------------------------------------------
  static llvm::Align alignOf(int bytes) {
    if (bytes < 1 || (bytes & (bytes - 1)) != 0)
      bug(fmt::format("alignment {} is not a power of two", bytes));
    return llvm::Align(bytes);
  }

  Value *address(int param, const Expr &index) {
    const thir::Param &p = paramAt(param);
    if (p.kind != thir::ParamKind::Tensor)
      bug(fmt::format("memory access through non-tensor parameter '{}'", p.name));
    if (!(index->type == thir::Type{DType::Int64, 1}))
      bug("memory index is not a scalar int64");
    return b_.CreateInBoundsGEP(memType(p.dtype), fn_->getArg(static_cast<unsigned>(param)),
                                expr(index));
  }

  Value *expr(const Expr &e) {
    if (!e)
      bug("null expression");
    auto it = cache_.find(e.get());
    if (it != cache_.end())
      return it->second;
    Value *v = std::visit(
        [&](const auto &op) {
          requireIsaHas<std::decay_t<decltype(op)>>();
          return exprOp(op, *e);
        },
        e->op);
    cache_.emplace(e.get(), v);
    return v;
  }

  Value *exprOp(const thir::ConstInt &c, const Node &n) {
    if (isFloat(n.type.elem))
      bug("integer constant of float type");
    return llvm::ConstantInt::get(valueType(n.type), static_cast<uint64_t>(c.value),
                                  isSigned(n.type.elem));
  }
  Value *exprOp(const thir::ConstFloat &c, const Node &n) {
    // float8 has no LLVM type: the constant is its encoding, rounded here as cvt would.
    if (isFloat8(n.type.elem))
      return llvm::ConstantInt::get(valueType(n.type), float8Bits(c.value, n.type.elem));
    if (!isFloat(n.type.elem))
      bug("float constant of non-float type");
    return llvm::ConstantFP::get(valueType(n.type), c.value);
  }
  Value *exprOp(const thir::ParamRef &r, const Node &n) {
    const thir::Param &p = paramAt(r.index);
    if (p.kind == thir::ParamKind::Tensor || p.kind == thir::ParamKind::TensorMap)
      bug(fmt::format("tensor parameter '{}' used as a value", p.name));
    DType t = p.kind == thir::ParamKind::Dim ? DType::Int64 : p.dtype;
    if (!(n.type == thir::Type{t, 1}))
      bug(fmt::format("parameter '{}' read as {}", p.name, thir::typeString(n.type)));
    Value *arg = fn_->getArg(static_cast<unsigned>(r.index));
    return t == DType::Bool ? b_.CreateICmpNE(arg, b_.getInt8(0)) : arg;
  }
  Value *exprOp(const thir::SpecialReg &s, const Node &) { return isa_.special(b_, s.reg, k_); }
  Value *exprOp(const thir::VarRef &v, const Node &n) {
    const VarSlot &s = slot(v.id);
    if (!(s.type == n.type))
      bug(fmt::format("v{} read as {}", v.id, thir::typeString(n.type)));
    return b_.CreateLoad(valueType(n.type), s.alloca, fmt::format("v{}.val", v.id));
  }
  Value *exprOp(const thir::Unary &u, const Node &n) { return unary(u.op, expr(u.a), n.type); }
  Value *exprOp(const thir::Binary &bin, const Node &n) {
    if (!(bin.a->type == bin.b->type))
      bug("binary operands differ in type");
    return binary(bin.op, expr(bin.a), expr(bin.b), bin.a->type);
  }
  Value *exprOp(const thir::Select &s, const Node &) {
    return b_.CreateSelect(expr(s.cond), expr(s.a), expr(s.b));
  }
  Value *exprOp(const thir::Cast &c, const Node &n) { return cast(expr(c.a), c.a->type, n.type); }
  Value *exprOp(const thir::Broadcast &bc, const Node &n) {
    return b_.CreateVectorSplat(static_cast<unsigned>(n.type.lanes), expr(bc.a));
  }
  Value *exprOp(const thir::GlobalLoad &l, const Node &n) {
    const thir::Param &p = paramAt(l.param);
    if (p.kind != thir::ParamKind::Tensor || p.dtype != n.type.elem)
      bug(fmt::format("load of {} from parameter '{}'", thir::typeString(n.type), p.name));
    llvm::Type *ty = vec(memType(p.dtype), n.type.lanes);
    Value *v = b_.CreateAlignedLoad(ty, address(l.param, l.index), alignOf(l.alignBytes));
    if (p.dtype == DType::Bool)
      v = b_.CreateICmpNE(v, llvm::Constant::getNullValue(ty));
    return v;
  }

  Value *exprOp(const thir::ExtractLane &e, const Node &) {
    return b_.CreateExtractElement(expr(e.vec), static_cast<uint64_t>(e.lane));
  }
  Value *exprOp(const thir::MakeVector &m, const Node &n) {
    Value *out = llvm::PoisonValue::get(valueType(n.type));
    for (size_t i = 0; i < m.elems.size(); ++i)
      out = b_.CreateInsertElement(out, expr(m.elems[i]), static_cast<uint64_t>(i));
    return out;
  }
  // A 32-bit value as i32 or float (shuffles move 32 bits), shuffled and cast back to `t`.
  Value *shuffle32(thir::ShflMode mode, Value *v, Value *arg, llvm::Type *t) {
    bool isF32 = t->isFloatTy();
    Value *r = isa_.shuffle(b_, mode, isF32 ? v : b_.CreateBitCast(v, b_.getInt32Ty()), arg);
    return isF32 ? r : b_.CreateBitCast(r, t);
  }
  Value *exprOp(const thir::Shfl &s, const Node &n) {
    return shuffle32(s.mode, expr(s.value), expr(s.arg), valueType(n.type));
  }
  Value *exprOp(const thir::ShflXor &s, const Node &n) {
    Value *v = expr(s.value);
    Value *mask = b_.getInt32(static_cast<uint32_t>(s.laneMask));
    // 64 bits as two 32-bit shuffles of the halves.
    if (dtypeBits(n.type.elem) == 64) {
      auto *halves = llvm::FixedVectorType::get(b_.getInt32Ty(), 2);
      Value *h = b_.CreateBitCast(v, halves), *r = llvm::PoisonValue::get(halves);
      for (uint64_t i = 0; i < 2; ++i)
        r = b_.CreateInsertElement(
            r, isa_.shuffle(b_, thir::ShflMode::Xor, b_.CreateExtractElement(h, i), mask), i);
      return b_.CreateBitCast(r, valueType(n.type));
    }
    return shuffle32(thir::ShflMode::Xor, v, mask, valueType(n.type));
  }
  Value *exprOp(const thir::SharedLoad &l, const Node &n) {
    auto *load = b_.CreateAlignedLoad(valueType(n.type), sharedAddress(l.byteOffset),
                                      sharedAlign(l.byteOffset, n.type));
    noteRegion(load, l.region);
    return load;
  }
  Value *exprOp(const thir::LdMatrix &l, const Node &n) {
    llvm::Intrinsic::ID id = llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16;
    if (l.num == 4)
      id = l.trans ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_trans_b16
                   : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x4_b16;
    else if (l.num == 2)
      id = l.trans ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_trans_b16
                   : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x2_b16;
    else
      id = l.trans ? llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_trans_b16
                   : llvm::Intrinsic::nvvm_ldmatrix_sync_aligned_m8n8_x1_b16;
    Value *addr = sharedAddress(l.byteOffset);
    llvm::Function *fn = llvm::Intrinsic::getOrInsertDeclaration(&mod_, id, {addr->getType()});
    Value *r = b_.CreateCall(fn, {addr});
    if (l.num == 1) // Int32 x 1 is a scalar, the intrinsic's own result
      return r;
    Value *out = llvm::PoisonValue::get(valueType(n.type));
    for (int i = 0; i < l.num; ++i)
      out = b_.CreateInsertElement(out, b_.CreateExtractValue(r, static_cast<unsigned>(i)),
                                   static_cast<uint64_t>(i));
    return out;
  }
  Value *exprOp(const thir::Mfma &m, const Node &) {
    // The bf16 forms take their inputs as i16 (the `_1k` forms: four per lane, as f16's).
    bool bf16 = m.inputType == DType::BFloat16;
    llvm::Intrinsic::ID id = m.m == 32 ? (bf16 ? llvm::Intrinsic::amdgcn_mfma_f32_32x32x8bf16_1k
                                               : llvm::Intrinsic::amdgcn_mfma_f32_32x32x8f16)
                                       : (bf16 ? llvm::Intrinsic::amdgcn_mfma_f32_16x16x16bf16_1k
                                               : llvm::Intrinsic::amdgcn_mfma_f32_16x16x16f16);
    Value *a = expr(m.a), *bv = expr(m.b);
    if (bf16) {
      auto *i16x4 = llvm::FixedVectorType::get(b_.getInt16Ty(), 4);
      a = b_.CreateBitCast(a, i16x4);
      bv = b_.CreateBitCast(bv, i16x4);
    }
    // cbsz, abid, blgp 0: no broadcast between blocks (one block per instruction).
    return math::callIntrinsic(b_, id, {},
                               {a, bv, expr(m.c), b_.getInt32(0), b_.getInt32(0), b_.getInt32(0)});
  }
  Value *exprOp(const thir::MmaSync &m, const Node &n) {
    // No single intrinsic covers f16 and bf16 with the same operand types: inline PTX, with the
    // accumulators tied to the results (as MLIR's NVVM dialect does).
    Value *a = expr(m.a), *bv = expr(m.b), *c = expr(m.c);
    auto *f32 = b_.getFloatTy();
    auto *i32 = b_.getInt32Ty();
    auto *retTy = llvm::StructType::get(ctx_, {f32, f32, f32, f32});
    auto *fnTy =
        llvm::FunctionType::get(retTy, {i32, i32, i32, i32, i32, i32, f32, f32, f32, f32}, false);
    std::string asmText = fmt::format(
        "mma.sync.aligned.m16n8k16.row.col.f32.{0}.{0}.f32 {{$0,$1,$2,$3}}, {{$4,$5,$6,$7}}, "
        "{{$8,$9}}, {{$10,$11,$12,$13}};",
        m.inputType == DType::BFloat16 ? "bf16" : "f16");
    auto *ia = llvm::InlineAsm::get(fnTy, asmText, "=f,=f,=f,=f,r,r,r,r,r,r,0,1,2,3", false);
    std::vector<Value *> args;
    for (unsigned i = 0; i < 4; ++i)
      args.push_back(b_.CreateExtractElement(a, uint64_t{i}));
    for (unsigned i = 0; i < 2; ++i)
      args.push_back(b_.CreateExtractElement(bv, uint64_t{i}));
    for (unsigned i = 0; i < 4; ++i)
      args.push_back(b_.CreateExtractElement(c, uint64_t{i}));
    Value *r = b_.CreateCall(ia, args);
    Value *out = llvm::PoisonValue::get(valueType(n.type));
    for (unsigned i = 0; i < 4; ++i)
      out = b_.CreateInsertElement(out, b_.CreateExtractValue(r, i), uint64_t{i});
    return out;
  }
  Value *exprOp(const thir::SharedAddress &a, const Node &) {
    return b_.CreatePtrToInt(sharedAddress(a.byteOffset), b_.getInt32Ty());
  }
  Value *exprOp(const thir::Wgmma &w, const Node &n) {
    // One asm block from fence to wait (thir::Wgmma): the accumulators are tied operands, so no
    // code LLVM schedules can read or move them while the wgmmas are in flight.
    Value *acc = expr(w.acc);
    unsigned S = static_cast<unsigned>(w.acc->type.lanes);
    auto *f32 = b_.getFloatTy();
    std::vector<llvm::Type *> outTys(S, f32), inTys(S, f32);
    std::vector<Value *> args;
    std::string constraints;
    for (unsigned i = 0; i < S; ++i)
      constraints += fmt::format("{}=f", i ? "," : "");
    for (unsigned i = 0; i < S; ++i) {
      constraints += fmt::format(",{}", i);
      args.push_back(b_.CreateExtractElement(acc, uint64_t{i}));
    }
    unsigned next = 2 * S;
    auto ptxType = [](DType t) {
      switch (t) {
      case DType::BFloat16:
        return "bf16";
      case DType::Float8E4M3:
        return "e4m3";
      case DType::Float8E5M2:
        return "e5m2";
      default:
        return "f16";
      }
    };
    const char *aTy = ptxType(w.inputType), *bTy = ptxType(w.bType());
    // Only 16-bit inputs have the imm-trans operands (float8 operands are K-major).
    bool transOperands = !isFloat8(w.inputType);
    std::string text = "{\n.reg .pred p;\nsetp.ne.b32 p, $" + std::to_string(next) + ", 0;\n";
    constraints += ",r";
    args.push_back(b_.getInt32(1));
    inTys.push_back(b_.getInt32Ty());
    ++next;
    // A ping-pong turn: wait for this warpgroup's before the fence, hand it over after the
    // commit (thir::Wgmma::turn).
    std::string handOver;
    if (w.turn.barrier >= 0) {
      auto [own, other] = turnBarriers(w.turn.barrier);
      if (w.turn.wait) {
        text += fmt::format("bar.sync ${}, 256;\n", next++);
        constraints += ",r";
        args.push_back(own);
        inTys.push_back(b_.getInt32Ty());
      }
      if (w.turn.pass) {
        handOver = fmt::format("bar.arrive ${}, 256;\n", next++);
        constraints += ",r";
        args.push_back(other);
        inTys.push_back(b_.getInt32Ty());
      }
    }
    text += "wgmma.fence.sync.aligned;\n";
    for (const thir::WgmmaInstr &in : w.instrs) {
      std::string d;
      for (int j = 0; j < w.n / 2; ++j)
        d += fmt::format("{}${}", j ? "," : "", in.accFirst + j);
      std::string a;
      Value *av = expr(in.a);
      if (w.aInRegisters) {
        for (unsigned j = 0; j < 4; ++j) {
          a += fmt::format("{}${}", j ? "," : "", next++);
          constraints += ",r";
          args.push_back(b_.CreateExtractElement(av, uint64_t{j}));
          inTys.push_back(b_.getInt32Ty());
        }
        a = "{" + a + "}";
      } else {
        a = fmt::format("${}", next++);
        constraints += ",l";
        args.push_back(av);
        inTys.push_back(b_.getInt64Ty());
      }
      unsigned bIdx = next++;
      constraints += ",l";
      args.push_back(expr(in.bDesc));
      inTys.push_back(b_.getInt64Ty());
      std::string trans = !transOperands ? ""
                          : w.aInRegisters
                              ? fmt::format(", {}", int(w.bMnMajor))
                              : fmt::format(", {}, {}", int(w.aMnMajor), int(w.bMnMajor));
      text += fmt::format("wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{}.{} {{{}}}, {}, ${}, p, "
                          "1, 1{};\n",
                          w.n, w.k(), aTy, bTy, d, a, bIdx, trans);
    }
    text += fmt::format("wgmma.commit_group.sync.aligned;\n{}wgmma.wait_group.sync.aligned {};\n}}",
                        handOver, w.pending);
    // wgmma reads shared memory (through its descriptors) and writes only registers: a
    // read-only call, so that stores stay on their side of it while loads of shared memory may
    // still be shared across it (interleave-wgmma's steps read the same words and scales).
    auto *retTy = llvm::StructType::get(ctx_, outTys);
    auto *fnTy = llvm::FunctionType::get(retTy, inTys, false);
    auto *r = b_.CreateCall(llvm::InlineAsm::get(fnTy, text, constraints, true), args);
    r->addFnAttr(llvm::Attribute::getWithMemoryEffects(ctx_, llvm::MemoryEffects::readOnly()));
    Value *out = llvm::PoisonValue::get(valueType(n.type));
    for (unsigned i = 0; i < S; ++i)
      out = b_.CreateInsertElement(out, b_.CreateExtractValue(r, i), uint64_t{i});
    return out;
  }
  Value *exprOp(const thir::Bitcast &bc, const Node &n) {
    return b_.CreateBitCast(expr(bc.a), valueType(n.type));
  }

  // Applies a scalar function to each lane (the nvvm math intrinsics are scalar-only).
  template <class F> Value *perLane(Value *v, F &&f) {
    auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
    if (!vt)
      return f(v);
    std::vector<Value *> lanes;
    for (unsigned i = 0; i < vt->getNumElements(); ++i)
      lanes.push_back(f(b_.CreateExtractElement(v, i)));
    Value *out = llvm::PoisonValue::get(
        llvm::FixedVectorType::get(lanes[0]->getType(), vt->getNumElements()));
    for (unsigned i = 0; i < lanes.size(); ++i)
      out = b_.CreateInsertElement(out, lanes[i], i);
    return out;
  }

  // float16/bfloat16 math is computed in float32 and rounded once at the end.
  template <class F> Value *viaF32(Value *v, thir::Type t, F &&f) {
    if (!isHalfLike(t.elem))
      return f(v);
    Value *wide = b_.CreateFPExt(v, vec(b_.getFloatTy(), t.lanes));
    return b_.CreateFPTrunc(f(wide), v->getType());
  }

  Value *unary(thir::UnOp op, Value *a, thir::Type t);
  Value *exponential(thir::UnOp op, Value *x);
  Value *absorbedExponential(Value *e, Value *other);
  Value *binary(thir::BinOp op, Value *a, Value *b, thir::Type t);
  Value *intPow(Value *a, Value *e, thir::Type t);
  Value *cast(Value *v, thir::Type from, thir::Type to);
  // float8 <-> float16 / float32 by sm_89's cvt, which converts two values at a time.
  Value *float8ToHalf(Value *v, DType f, int lanes);
  Value *toFloat8(Value *v, DType from, DType t, int lanes);
  /// Lane `i` of `v` (`v` itself when it is a scalar), and the inverse: a vector of `lanes`
  /// (or the scalar).
  Value *laneOf(Value *v, int i) {
    return v->getType()->isVectorTy() ? b_.CreateExtractElement(v, uint64_t(i)) : v;
  }
  Value *gather(const std::vector<Value *> &lanes) {
    if (lanes.size() == 1)
      return lanes[0];
    Value *out = llvm::PoisonValue::get(vec(lanes[0]->getType(), static_cast<int>(lanes.size())));
    for (size_t i = 0; i < lanes.size(); ++i)
      out = b_.CreateInsertElement(out, lanes[i], uint64_t(i));
    return out;
  }

  llvm::Module &mod_;
  llvm::LLVMContext &ctx_;
  const thir::Kernel &k_;
  const TargetOptions &opts_;
  const Isa &isa_;
  llvm::IRBuilder<> b_;
  llvm::Function *fn_ = nullptr;
  std::map<int, VarSlot> vars_;
  llvm::GlobalVariable *smem_ = nullptr;
  std::unordered_map<const Node *, Value *> cache_;
  std::vector<std::pair<llvm::Instruction *, thir::SmemRegion>> regionAccesses_;
  thir::TrailingZeros trailingZeros_;
  // The float32 exp and exp2 results this kernel computed with subnormal results, by value:
  // which function, of what argument (absorbedExponential may recompute them flushing).
  llvm::ValueMap<const Value *, std::pair<thir::UnOp, llvm::WeakTrackingVH>> exponentials_;
};

Value *KernelEmitter::unary(thir::UnOp op, Value *a, thir::Type t) {
  using thir::UnOp;
  DType et = t.elem;
  if (isFloat8(et)) {
    // float8 has no arithmetic of its own: in float32, rounded back once.
    thir::Type f32{DType::Float32, t.lanes};
    return cast(unary(op, cast(a, t, f32), f32), f32, t);
  }
  switch (op) {
  case UnOp::Neg:
    return isFloat(et) ? b_.CreateFNeg(a) : b_.CreateNeg(a);
  case UnOp::Not:
  case UnOp::BitNot:
    return b_.CreateNot(a);
  case UnOp::Abs:
    if (isFloat(et))
      return math::callIntrinsic(b_, llvm::Intrinsic::fabs, {a->getType()}, {a});
    if (!isSigned(et))
      return a;
    return math::callIntrinsic(b_, llvm::Intrinsic::abs, {a->getType()}, {a, b_.getFalse()});
  default:
    break;
  }
  if (!isFloat(et))
    bug(fmt::format("{} on {}", unOpName(op), dtypeName(et)));
  if (et == DType::Float64) {
    if (!thir::hasFloat64(op))
      unsupported(fmt::format("{} on float64", unOpName(op)));
    switch (op) {
    case UnOp::Sqrt:
      return math::callIntrinsic(b_, llvm::Intrinsic::sqrt, {a->getType()}, {a});
    case UnOp::Rsqrt:
      return b_.CreateFDiv(llvm::ConstantFP::get(a->getType(), 1.0),
                           math::callIntrinsic(b_, llvm::Intrinsic::sqrt, {a->getType()}, {a}));
    case UnOp::Floor:
      return math::floor(b_, a);
    case UnOp::Ceil:
      return math::callIntrinsic(b_, llvm::Intrinsic::ceil, {a->getType()}, {a});
    default:
      bug(fmt::format("thir::hasFloat64 has {}, codegen does not", unOpName(op)));
    }
  }
  return viaF32(a, t, [&](Value *x) -> Value * {
    switch (op) {
    case UnOp::Sqrt:
      return math::callIntrinsic(b_, llvm::Intrinsic::sqrt, {x->getType()}, {x});
    case UnOp::Floor:
      return math::floor(b_, x);
    case UnOp::Ceil:
      return math::callIntrinsic(b_, llvm::Intrinsic::ceil, {x->getType()}, {x});
    default:
      break;
    }
    return perLane(x, [&](Value *s) -> Value * {
      switch (op) {
      case UnOp::Exp:
      case UnOp::Exp2:
        return exponential(op, s);
      case UnOp::Log:
        return math::log(b_, s);
      case UnOp::Log2:
        return math::log2(b_, s);
      case UnOp::Rsqrt:
        return math::rsqrt(b_, s);
      case UnOp::Tanh:
        return math::tanh(b_, s, opts_.fastMath);
      case UnOp::Erf:
        return math::erf(b_, s);
      case UnOp::Sigmoid:
        return math::sigmoid(b_, s, opts_.fastMath);
      default:
        bug("unexpected unary op");
      }
    });
  });
}

// a ** e on integers by square-and-multiply over every bit of e, as straight-line selects
// (expressions may not branch). Negative exponents give 0, except for bases 1 and -1.
Value *KernelEmitter::intPow(Value *a, Value *e, thir::Type t) {
  llvm::Type *ty = a->getType();
  auto k = [&](int64_t v) { return llvm::ConstantInt::get(ty, static_cast<uint64_t>(v), true); };
  Value *result = k(1);
  Value *base = a;
  Value *rest = e;
  for (int bit = 0; bit < dtypeBits(t.elem); ++bit) {
    Value *odd = b_.CreateICmpNE(b_.CreateAnd(rest, k(1)), k(0));
    result = b_.CreateSelect(odd, b_.CreateMul(result, base), result);
    base = b_.CreateMul(base, base);
    rest = b_.CreateLShr(rest, k(1));
  }
  if (!isSigned(t.elem))
    return result;
  Value *negExp = b_.CreateICmpSLT(e, k(0));
  Value *oddExp = b_.CreateICmpNE(b_.CreateAnd(e, k(1)), k(0));
  Value *minusOne = b_.CreateSelect(oddExp, k(-1), k(1)); // (-1) ** e for negative e
  Value *forNeg = b_.CreateSelect(b_.CreateICmpEQ(a, k(1)), k(1),
                                  b_.CreateSelect(b_.CreateICmpEQ(a, k(-1)), minusOne, k(0)));
  return b_.CreateSelect(negExp, forNeg, result);
}

Value *KernelEmitter::exponential(thir::UnOp op, Value *x) {
  bool flush = opts_.fastMath;
  Value *r = op == thir::UnOp::Exp ? math::exp(b_, x, flush) : math::exp2(b_, x, flush);
  if (!flush)
    exponentials_[r] = {op, llvm::WeakTrackingVH(x)};
  return r;
}

// e + c (or e - c, c - e) for an exp or exp2 result e and a constant |c| >= 2^-102: a
// subnormal e is below half an ulp of c, so the sum is the same whether e is that subnormal or
// 0, and e may be computed flushing subnormal results (one MUFU.EX2 instead of
// math::exp2's square of the half; sigmoid's 1 + exp(-x)). A recomputation: the first e stays
// for any other use it has, and is dead code otherwise.
Value *KernelEmitter::absorbedExponential(Value *e, Value *other) {
  auto it = exponentials_.find(e);
  auto *c = llvm::dyn_cast<llvm::ConstantFP>(other);
  if (it == exponentials_.end() || !c || !c->getValueAPF().isFiniteNonZero() ||
      llvm::ilogb(c->getValueAPF()) < -102)
    return e;
  auto [op, arg] = it->second;
  if (!arg)
    return e;
  return op == thir::UnOp::Exp ? math::exp(b_, arg, true) : math::exp2(b_, arg, true);
}

Value *KernelEmitter::binary(thir::BinOp op, Value *a, Value *b, thir::Type t) {
  using thir::BinOp;
  DType et = t.elem;
  if (isFloat8(et)) {
    // In float32 (float8 values are exact there), rounded back once; comparisons give bool.
    thir::Type f32{DType::Float32, t.lanes};
    Value *r = binary(op, cast(a, t, f32), cast(b, t, f32), f32);
    return r->getType()->isIntOrIntVectorTy(1) ? r : cast(r, f32, t);
  }
  bool fp = isFloat(et);
  bool sgn = isSigned(et);
  // The program's own +, - and * may contract (a * b + c -> fma) as nvcc's code does by
  // default; the math library's sequences are built without the flag and keep their roundings.
  auto contractible = [&](Value *v) {
    if (auto *i = llvm::dyn_cast<llvm::Instruction>(v); i && opts_.fuseMultiplyAdd)
      i->setHasAllowContract(true);
    return v;
  };
  if (fp && (op == BinOp::Add || op == BinOp::Sub)) {
    Value *a2 = absorbedExponential(a, b);
    b = absorbedExponential(b, a);
    a = a2;
  }
  switch (op) {
  case BinOp::Add:
    return fp ? contractible(b_.CreateFAdd(a, b)) : b_.CreateAdd(a, b);
  case BinOp::Sub:
    return fp ? contractible(b_.CreateFSub(a, b)) : b_.CreateSub(a, b);
  case BinOp::Mul:
    return fp ? contractible(b_.CreateFMul(a, b)) : b_.CreateMul(a, b);
  case BinOp::Div:
    if (fp && et == DType::Float32 && !opts_.preciseDiv) {
      // div.full.f32: at most 2 ulp off, full range, no slow path (TileLang's fast-math default).
      if (t.lanes == 1)
        return math::divide(b_, a, b);
      Value *out = llvm::PoisonValue::get(a->getType());
      for (int i = 0; i < t.lanes; ++i)
        out = b_.CreateInsertElement(
            out, math::divide(b_, b_.CreateExtractElement(a, i), b_.CreateExtractElement(b, i)), i);
      return out;
    }
    return fp ? b_.CreateFDiv(a, b) : sgn ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
  case BinOp::FloorDiv:
  case BinOp::Mod: {
    if (fp) {
      if (et == DType::Float64 || et == DType::Float32) {
        Value *q = math::floor(b_, b_.CreateFDiv(a, b));
        return op == BinOp::FloorDiv ? q : b_.CreateFSub(a, b_.CreateFMul(q, b));
      }
      llvm::Type *wide = vec(b_.getFloatTy(), t.lanes);
      Value *r =
          binary(op, b_.CreateFPExt(a, wide), b_.CreateFPExt(b, wide), {DType::Float32, t.lanes});
      return b_.CreateFPTrunc(r, a->getType());
    }
    if (!sgn)
      return op == BinOp::FloorDiv ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
    // Python rounds the quotient toward -inf: when the remainder is nonzero and its sign differs
    // from the divisor's, C's truncated result is one off.
    Value *q = b_.CreateSDiv(a, b);
    Value *r = b_.CreateSRem(a, b);
    Value *zero = llvm::Constant::getNullValue(a->getType());
    Value *fix = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
    if (op == BinOp::FloorDiv)
      return b_.CreateSub(q, b_.CreateZExt(fix, a->getType()));
    return b_.CreateSelect(fix, b_.CreateAdd(r, b), r);
  }
  case BinOp::Pow:
    if (!fp)
      return intPow(a, b, t);
    if (et == DType::Float64)
      unsupported("pow on float64");
    return viaF32(a, t, [&](Value *x) {
      Value *y = isHalfLike(et) ? b_.CreateFPExt(b, x->getType()) : b;
      if (t.lanes == 1)
        return math::pow(b_, x, y);
      Value *out = llvm::PoisonValue::get(x->getType());
      for (unsigned i = 0; i < static_cast<unsigned>(t.lanes); ++i)
        out = b_.CreateInsertElement(
            out, math::pow(b_, b_.CreateExtractElement(x, i), b_.CreateExtractElement(y, i)), i);
      return out;
    });
  case BinOp::Min:
  case BinOp::Max: {
    // minnum/maxnum return the other operand for one NaN, like CUDA's fminf/fmaxf.
    llvm::Intrinsic::ID id = op == BinOp::Min ? (fp    ? llvm::Intrinsic::minnum
                                                 : sgn ? llvm::Intrinsic::smin
                                                       : llvm::Intrinsic::umin)
                                              : (fp    ? llvm::Intrinsic::maxnum
                                                 : sgn ? llvm::Intrinsic::smax
                                                       : llvm::Intrinsic::umax);
    return math::callIntrinsic(b_, id, {a->getType()}, {a, b});
  }
  case BinOp::Eq:
  case BinOp::Ne:
  case BinOp::Lt:
  case BinOp::Le:
  case BinOp::Gt:
  case BinOp::Ge: {
    using P = llvm::CmpInst::Predicate;
    static constexpr P fpPreds[] = {P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT,
                                    P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE};
    static constexpr P sPreds[] = {P::ICMP_EQ,  P::ICMP_NE,  P::ICMP_SLT,
                                   P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE};
    static constexpr P uPreds[] = {P::ICMP_EQ,  P::ICMP_NE,  P::ICMP_ULT,
                                   P::ICMP_ULE, P::ICMP_UGT, P::ICMP_UGE};
    size_t i = static_cast<size_t>(op) - static_cast<size_t>(BinOp::Eq);
    if (fp)
      return b_.CreateFCmp(fpPreds[i], a, b);
    return b_.CreateICmp(sgn ? sPreds[i] : uPreds[i], a, b);
  }
  case BinOp::And:
    return b_.CreateAnd(a, b);
  case BinOp::Or:
    return b_.CreateOr(a, b);
  case BinOp::BitAnd:
    return b_.CreateAnd(a, b);
  case BinOp::BitXor:
    return b_.CreateXor(a, b);
  case BinOp::BitOr:
    return b_.CreateOr(a, b);
  case BinOp::Shl:
    return b_.CreateShl(a, b);
  case BinOp::Shr:
    return sgn ? b_.CreateAShr(a, b) : b_.CreateLShr(a, b);
  }
  bug("unknown binary op");
}

Value *KernelEmitter::cast(Value *v, thir::Type from, thir::Type to) {
  if (from.lanes != to.lanes)
    bug("cast changes the lane count");
  DType f = from.elem;
  DType t = to.elem;
  if (f == t)
    return v;
  if (isFloat8(f) || isFloat8(t)) {
    // Lowering reports this at the source construct; thread IR text can still get here.
    if (!opts_.target.hasFp8Convert)
      unsupported(fmt::format("cast from {} to {} on {} (float8 conversions need sm_89 or newer)",
                              dtypeName(f), dtypeName(t), opts_.target.arch));
    // float8 -> float16 is exact (both float8 formats fit float16), so every conversion from
    // float8 goes through it; to float8, float16 and float32 convert directly (one rounding)
    // and every other type through float32 (exact for bfloat16).
    if (isFloat8(f))
      return cast(float8ToHalf(v, f, to.lanes), {DType::Float16, to.lanes}, to);
    if (f == DType::Float16 || f == DType::Float32)
      return toFloat8(v, f, t, to.lanes);
    thir::Type f32{DType::Float32, to.lanes};
    return cast(cast(v, from, f32), f32, to);
  }
  llvm::Type *dst = valueType(to);
  if (t == DType::Bool) {
    Value *zero = llvm::Constant::getNullValue(v->getType());
    return isFloat(f) ? b_.CreateFCmpUNE(v, zero) : b_.CreateICmpNE(v, zero);
  }
  if (f == DType::Bool)
    return isFloat(t) ? b_.CreateUIToFP(v, dst) : b_.CreateZExt(v, dst);
  if (!isFloat(f) && !isFloat(t))
    return b_.CreateIntCast(v, dst, isSigned(f));
  if (!isFloat(f))
    return isSigned(f) ? b_.CreateSIToFP(v, dst) : b_.CreateUIToFP(v, dst);
  if (!isFloat(t)) {
    // Saturating (NaN -> 0), like PTX's cvt.rzi.sat; a plain fptosi would be poison when out of
    // range.
    return math::callIntrinsic(
        b_, isSigned(t) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat,
        {dst, v->getType()}, {v});
  }
  // float <-> float. half <-> bfloat goes through float32, which holds both exactly.
  if (isHalfLike(f) && isHalfLike(t))
    return b_.CreateFPTrunc(b_.CreateFPExt(v, vec(b_.getFloatTy(), to.lanes)), dst);
  if (dtypeBits(t) > dtypeBits(f))
    return b_.CreateFPExt(v, dst);
  return b_.CreateFPTrunc(v, dst);
}

Value *KernelEmitter::float8ToHalf(Value *v, DType f, int lanes) {
  // cvt.rn.f16x2.e4m3x2 (e5m2x2): byte 0 of the 16-bit operand becomes lane 0 (the low half).
  auto id = f == DType::Float8E4M3 ? llvm::Intrinsic::nvvm_e4m3x2_to_f16x2_rn
                                   : llvm::Intrinsic::nvvm_e5m2x2_to_f16x2_rn;
  std::vector<Value *> out;
  for (int i = 0; i < lanes; i += 2) {
    Value *pair = gather({laneOf(v, i), i + 1 < lanes ? laneOf(v, i + 1) : b_.getInt8(0)});
    Value *h2 = math::callIntrinsic(b_, id, {}, {b_.CreateBitCast(pair, b_.getInt16Ty())});
    out.push_back(b_.CreateExtractElement(h2, uint64_t{0}));
    if (i + 1 < lanes)
      out.push_back(b_.CreateExtractElement(h2, uint64_t{1}));
  }
  return gather(out);
}

Value *KernelEmitter::toFloat8(Value *v, DType from, DType t, int lanes) {
  bool e4m3 = t == DType::Float8E4M3;
  std::vector<Value *> out;
  for (int i = 0; i < lanes; i += 2) {
    Value *lo = laneOf(v, i);
    Value *hi = i + 1 < lanes ? laneOf(v, i + 1) : llvm::ConstantFP::get(lo->getType(), 0.0);
    Value *packed;
    if (from == DType::Float16) {
      // cvt.rn.satfinite.e4m3x2.f16x2: lane 0 (the low half) becomes byte 0.
      packed = math::callIntrinsic(b_,
                                   e4m3 ? llvm::Intrinsic::nvvm_f16x2_to_e4m3x2_rn
                                        : llvm::Intrinsic::nvvm_f16x2_to_e5m2x2_rn,
                                   {}, {gather({lo, hi})});
    } else {
      // cvt.rn.satfinite.e4m3x2.f32 d, a, b puts a in the upper byte: (hi, lo).
      packed = math::callIntrinsic(
          b_, e4m3 ? llvm::Intrinsic::nvvm_ff_to_e4m3x2_rn : llvm::Intrinsic::nvvm_ff_to_e5m2x2_rn,
          {}, {hi, lo});
    }
    Value *bytes = b_.CreateBitCast(packed, vec(b_.getInt8Ty(), 2));
    out.push_back(b_.CreateExtractElement(bytes, uint64_t{0}));
    if (i + 1 < lanes)
      out.push_back(b_.CreateExtractElement(bytes, uint64_t{1}));
  }
  return gather(out);
}

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
