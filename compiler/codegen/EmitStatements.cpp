// KernelEmitter's statements: stores, atomics, control flow, barriers, cp.async, mbarriers, TMA
// and register reallocation.
#include "codegen/KernelEmitter.h"
#include "codegen/MathLowering.h"

#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <algorithm>

namespace tilec::codegen::detail {

void KernelEmitter::body(const thir::Body &body) {
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

void KernelEmitter::stmt(const thir::GlobalStore &s) {
  const thir::Param &p = paramAt(s.param);
  if (p.kind != thir::ParamKind::Tensor || p.dtype != s.value->type.elem)
    bug(fmt::format("store of {} into parameter '{}'", thir::typeString(s.value->type), p.name));
  Value *v = expr(s.value);
  if (p.dtype == DType::Bool)
    v = b_.CreateZExt(v, vec(b_.getInt8Ty(), s.value->type.lanes));
  b_.CreateAlignedStore(v, address(s.param, s.index), alignOf(s.alignBytes));
}

void KernelEmitter::stmt(const thir::CpAsync &c) {
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

void KernelEmitter::stmt(const thir::CpAsyncCommit &) {
  auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), false);
  b_.CreateCall(llvm::InlineAsm::get(fnTy, "cp.async.commit_group;", "~{memory}", true));
}

void KernelEmitter::stmt(const thir::CpAsyncWait &w) {
  auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), false);
  b_.CreateCall(llvm::InlineAsm::get(fnTy, fmt::format("cp.async.wait_group {};", w.pending),
                                     "~{memory}", true));
}

void KernelEmitter::stmt(const thir::Printf &p) {
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

llvm::AtomicRMWInst::BinOp KernelEmitter::atomicRMW(AtomicOp op, DType t) {
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

void KernelEmitter::stmt(const thir::GlobalAtomic &s) {
  const thir::Param &p = paramAt(s.param);
  if (p.kind != thir::ParamKind::Tensor || !(s.value->type == thir::Type{p.dtype, 1}) ||
      p.dtype == DType::Bool)
    bug(fmt::format("atomic {} of {} into parameter '{}'", atomicOpName(s.op),
                    thir::typeString(s.value->type), p.name));
  b_.CreateAtomicRMW(atomicRMW(s.op, p.dtype), address(s.param, s.index), expr(s.value),
                     llvm::Align(dtypeBytes(p.dtype)), llvm::AtomicOrdering::Monotonic);
}

void KernelEmitter::stmt(const thir::SharedAtomic &s) {
  DType t = s.value->type.elem;
  b_.CreateAtomicRMW(atomicRMW(s.op, t), sharedAddress(s.byteOffset), expr(s.value),
                     llvm::Align(dtypeBytes(t)), llvm::AtomicOrdering::Monotonic);
}

void KernelEmitter::stmt(const thir::IfStmt &s) {
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

void KernelEmitter::stmt(const thir::ForStmt &s) {
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
        s.unroll
            ? llvm::MDNode::get(ctx_, llvm::MDString::get(ctx_, "llvm.loop.unroll.full"))
            : llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, "llvm.loop.unroll.count"),
                                       llvm::ConstantAsMetadata::get(b_.getInt32(s.unrollCount))});
    llvm::MDNode *loopID = llvm::MDNode::getDistinct(ctx_, {nullptr, hint});
    loopID->replaceOperandWith(0, loopID);
    latch->setMetadata(llvm::LLVMContext::MD_loop, loopID);
  }
  b_.SetInsertPoint(endBB);
}

llvm::Align KernelEmitter::naturalAlign(thir::Type t) {
  return llvm::Align(std::min(16, dtypeBytes(t.elem) * t.lanes));
}

llvm::Align KernelEmitter::sharedAlign(const Expr &byteOffset, thir::Type t) {
  int tz = std::min(trailingZeros_.of(byteOffset), 4);
  return std::max(naturalAlign(t), llvm::Align(uint64_t{1} << tz));
}

void KernelEmitter::stmt(const thir::SharedStore &s) {
  auto *store = b_.CreateAlignedStore(expr(s.value), sharedAddress(s.byteOffset),
                                      sharedAlign(s.byteOffset, s.value->type));
  noteRegion(store, s.region);
}

void KernelEmitter::noteRegion(llvm::Instruction *access,
                               const std::optional<thir::SmemRegion> &region) {
  if (region)
    regionAccesses_.emplace_back(access, *region);
}

void KernelEmitter::attachSharedAliasScopes() {
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

Value *KernelEmitter::sharedAddress(const Expr &byteOffset) {
  if (!(byteOffset->type == thir::Type{DType::Int32, 1}))
    bug("shared offset is not int32");
  if (k_.dynamicSharedBytes <= 0)
    bug("shared access in a kernel without dynamic shared memory");
  if (!smem_) {
    smem_ = mod_.getGlobalVariable("tilec_smem");
    if (!smem_) {
      auto *ty = llvm::ArrayType::get(b_.getInt8Ty(), 0);
      smem_ = new llvm::GlobalVariable(mod_, ty, false, llvm::GlobalValue::ExternalLinkage, nullptr,
                                       "tilec_smem", nullptr, llvm::GlobalValue::NotThreadLocal, 3);
      // The period of the 128-byte swizzle, so that swizzled tiles start on it.
      smem_->setAlignment(llvm::Align(opts_.target.sharedBufferAlign));
    }
  }
  return b_.CreateInBoundsGEP(b_.getInt8Ty(), smem_, expr(byteOffset));
}

void KernelEmitter::stmt(const thir::FenceProxyAsync &) {
  auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), false);
  b_.CreateCall(llvm::InlineAsm::get(fnTy, "fence.proxy.async.shared::cta;", "~{memory}", true));
}

void KernelEmitter::stmt(const thir::FenceCta &) {
  auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), false);
  b_.CreateCall(llvm::InlineAsm::get(fnTy, "fence.acq_rel.cta;", "~{memory}", true));
}

void KernelEmitter::stmt(const thir::Barrier &bar) {
  if (bar.threads != 0 && !opts_.target.hasNamedBarriers)
    unsupported(fmt::format("a barrier of part of a block on {}", opts_.target.arch));
  isa_.barrier(b_, bar);
}

void KernelEmitter::asmStmt(const std::string &text, const std::string &constraints,
                            std::vector<Value *> args) {
  std::vector<llvm::Type *> types;
  for (Value *a : args)
    types.push_back(a->getType());
  auto *fnTy = llvm::FunctionType::get(b_.getVoidTy(), types, false);
  b_.CreateCall(llvm::InlineAsm::get(fnTy, text, constraints + "~{memory}", true), args);
}

Value *KernelEmitter::sharedWindow(const Expr &byteOffset) {
  return b_.CreatePtrToInt(sharedAddress(byteOffset), b_.getInt32Ty());
}

void KernelEmitter::stmt(const thir::MbarrierInit &m) {
  asmStmt("mbarrier.init.shared::cta.b64 [$0], $1;", "r,r,",
          {sharedWindow(m.byteOffset), expr(m.count)});
}

void KernelEmitter::stmt(const thir::MbarrierArrive &m) {
  if (m.txBytes)
    asmStmt("mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;", "r,r,",
            {sharedWindow(m.byteOffset), expr(m.txBytes)});
  else
    asmStmt("mbarrier.arrive.shared::cta.b64 _, [$0];", "r,", {sharedWindow(m.byteOffset)});
}

void KernelEmitter::stmt(const thir::MbarrierWait &m) {
  // try_wait may return false after a time limit: loop until the phase completed. Labels
  // inside a PTX { } block are local to it, so the block can appear many times.
  asmStmt("{\n.reg .pred tilec_p;\ntilec_wait:\n"
          "mbarrier.try_wait.parity.shared::cta.b64 tilec_p, [$0], $1;\n"
          "@!tilec_p bra tilec_wait;\n}",
          "r,r,", {sharedWindow(m.byteOffset), expr(m.parity)});
}

std::pair<Value *, Value *> KernelEmitter::turnBarriers(int barrier) {
  Value *tid = math::callIntrinsic(b_, llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x, {}, {});
  Value *w = b_.CreateAnd(b_.CreateLShr(tid, 7), 1);
  return {b_.CreateAdd(b_.getInt32(barrier), w), b_.CreateSub(b_.getInt32(barrier + 1), w)};
}

void KernelEmitter::stmt(const thir::WarpgroupTurn &t) {
  auto [own, other] = turnBarriers(t.barrier);
  if (t.pass)
    asmStmt("bar.arrive $0, 256;", "r,", {other});
  else
    asmStmt("bar.sync $0, 256;", "r,", {own});
}

void KernelEmitter::stmt(const thir::FenceMbarrierInit &) {
  asmStmt("fence.mbarrier_init.release.cluster;", "", {});
}

void KernelEmitter::stmt(const thir::TmaLoad &t) {
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

void KernelEmitter::stmt(const thir::SetMaxNReg &r) {
  math::callIntrinsic(b_,
                      r.increase ? llvm::Intrinsic::nvvm_setmaxnreg_inc_sync_aligned_u32
                                 : llvm::Intrinsic::nvvm_setmaxnreg_dec_sync_aligned_u32,
                      {}, {b_.getInt32(r.regs)});
}

void KernelEmitter::stmt(const thir::WgmmaWait &w) {
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

} // namespace tilec::codegen::detail
