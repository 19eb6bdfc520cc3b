// The emitter of one kernel's LLVM IR from thread IR, private to codegen: Codegen.cpp drives it,
// EmitStatements.cpp, EmitExpressions.cpp and EmitArithmetic.cpp hold its member functions.
#pragma once

#include "codegen/Codegen.h"
#include "codegen/Isa.h"
#include "threadir/TrailingZeros.h"

#include <fmt/format.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/ValueMap.h>

#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tilec::codegen::detail {

using llvm::Value;
using thir::Expr;
using thir::Node;

// A user-facing failure deep inside expression codegen; buildModule turns it into a Result.
struct CodegenError {
  std::string message;
};

[[noreturn]] inline void unsupported(std::string what) {
  throw CodegenError{fmt::format("not supported yet: {}", what)};
}

[[noreturn]] inline void bug(std::string what) {
  throw std::logic_error(fmt::format("codegen: malformed thread IR: {}", what));
}

inline bool isHalfLike(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

std::string_view unOpName(thir::UnOp op);

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
  void body(const thir::Body &body);

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

  void stmt(const thir::GlobalStore &s);

  void stmt(const thir::CpAsync &c);
  void stmt(const thir::CpAsyncCommit &);
  void stmt(const thir::CpAsyncWait &w);

  void stmt(const thir::Printf &p);

  static llvm::AtomicRMWInst::BinOp atomicRMW(AtomicOp op, DType t);

  void stmt(const thir::GlobalAtomic &s);

  void stmt(const thir::SharedAtomic &s);

  void stmt(const thir::IfStmt &s);

  void stmt(const thir::ForStmt &s);

  static llvm::Align naturalAlign(thir::Type t);

  /// The alignment a shared access may claim: its type's, or more where every thread's offset
  /// is a known multiple (dynamic shared memory starts on TargetInfo::sharedBufferAlign). The
  /// load/store vectorizer merges a run of element accesses only from an aligned first one.
  llvm::Align sharedAlign(const Expr &byteOffset, thir::Type t);

  void stmt(const thir::SharedStore &s);

  void noteRegion(llvm::Instruction *access, const std::optional<thir::SmemRegion> &region);

  /// Every shared access lowering placed in a region gets that region's alias scope and is
  /// marked as not aliasing the regions disjoint from it. All buffers are offsets into one
  /// extern array, so without this LLVM must assume a store to one buffer may change any other:
  /// it reloads a value after every store to another buffer, and the load/store vectorizer stops
  /// at such loads. Regions that overlap (buffers sharing bytes) keep aliasing each other.
  void attachSharedAliasScopes();

  /// The module's dynamic shared memory (one extern array that every kernel uses from 0).
  Value *sharedAddress(const Expr &byteOffset);

  void stmt(const thir::FenceProxyAsync &);

  void stmt(const thir::FenceCta &);

  void stmt(const thir::Barrier &bar);

  // ---- mbarriers, TMA, register reallocation ---------------------------------------------
  // Inline PTX, as for cp.async: each is one instruction with memory effects the optimizer must
  // keep in place, with the shared operands as 32-bit shared-window addresses.
  void asmStmt(const std::string &text, const std::string &constraints, std::vector<Value *> args);
  Value *sharedWindow(const Expr &byteOffset);
  void stmt(const thir::MbarrierInit &m);
  void stmt(const thir::MbarrierArrive &m);
  void stmt(const thir::MbarrierWait &m);
  // This warpgroup's and the other's barrier of a ping-pong turn (thir::WarpgroupTurn).
  std::pair<Value *, Value *> turnBarriers(int barrier);
  void stmt(const thir::WarpgroupTurn &t);
  void stmt(const thir::FenceMbarrierInit &);
  void stmt(const thir::TmaLoad &t);
  void stmt(const thir::SetMaxNReg &r);
  void stmt(const thir::WgmmaWait &w);

  // ---- Expressions ------------------------------------------------------------------------
  static llvm::Align alignOf(int bytes);

  Value *address(int param, const Expr &index);

  Value *expr(const Expr &e);

  Value *exprOp(const thir::ConstInt &c, const Node &n);
  Value *exprOp(const thir::ConstFloat &c, const Node &n);
  Value *exprOp(const thir::Undef &u, const Node &n);
  Value *exprOp(const thir::ParamRef &r, const Node &n);
  Value *exprOp(const thir::SpecialReg &s, const Node &) { return isa_.special(b_, s.reg, k_); }
  Value *exprOp(const thir::VarRef &v, const Node &n);
  Value *exprOp(const thir::Unary &u, const Node &n) { return unary(u.op, expr(u.a), n.type); }
  Value *exprOp(const thir::Binary &bin, const Node &n);
  Value *exprOp(const thir::Select &s, const Node &);
  Value *exprOp(const thir::Cast &c, const Node &n) { return cast(expr(c.a), c.a->type, n.type); }
  Value *exprOp(const thir::Broadcast &bc, const Node &n);
  Value *exprOp(const thir::GlobalLoad &l, const Node &n);

  Value *exprOp(const thir::ExtractLane &e, const Node &);
  Value *exprOp(const thir::MakeVector &m, const Node &n);
  // A 32-bit value as i32 or float (shuffles move 32 bits), shuffled and cast back to `t`.
  Value *shuffle32(thir::ShflMode mode, Value *v, Value *arg, llvm::Type *t);
  Value *exprOp(const thir::Shfl &s, const Node &n);
  Value *exprOp(const thir::ShflXor &s, const Node &n);
  Value *exprOp(const thir::SharedLoad &l, const Node &n);
  Value *exprOp(const thir::LdMatrix &l, const Node &n);
  Value *exprOp(const thir::Mfma &m, const Node &);
  Value *exprOp(const thir::MmaSync &m, const Node &n);
  Value *exprOp(const thir::SharedAddress &a, const Node &);
  Value *exprOp(const thir::Wgmma &w, const Node &n);
  /// A wgmma's operands, evaluated once for the asm blocks that use them.
  struct WgmmaOperands {
    Value *acc = nullptr;   // null when the asm clears
    std::vector<Value *> a; // A in registers: each instruction's four words
    /// Shared-memory descriptors as a base and a constant offset: the bases go to the asm once
    /// and the asm adds the offsets just before each instruction, so that LLVM keeps no
    /// register per instruction live (it hoists loop-invariant descriptors, such as those of a
    /// Q kept in shared memory, out of the loop: 36 of 64 bits for MLA's 576-wide Q).
    struct Descriptor {
      size_t base = 0;
      int64_t offset = 0;
    };
    std::vector<Value *> descriptorBases;
    std::vector<Descriptor> aDesc, bDesc;
    Value *own = nullptr, *other = nullptr; // the turn's barriers
    Value *active = nullptr;                // i32: whether this warpgroup issues (Wgmma::active)
  };
  WgmmaOperands::Descriptor wgmmaDescriptor(const thir::Expr &e, WgmmaOperands &ops,
                                            std::vector<const thir::Node *> &bases);
  Value *wgmmaAsm(const thir::Wgmma &w, const Node &n, const WgmmaOperands &ops, bool clear);
  Value *exprOp(const thir::Bitcast &bc, const Node &n);

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

} // namespace tilec::codegen::detail
