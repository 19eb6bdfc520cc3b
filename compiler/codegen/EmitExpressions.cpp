// KernelEmitter's expressions: constants, parameters, loads, shuffles, and the matrix
// instructions (mma.sync, wgmma, MFMA).
#include "codegen/KernelEmitter.h"
#include "codegen/MathLowering.h"

#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <stdexcept>

namespace tilec::codegen::detail {

llvm::Align KernelEmitter::alignOf(int bytes) {
  if (bytes < 1 || (bytes & (bytes - 1)) != 0)
    bug(fmt::format("alignment {} is not a power of two", bytes));
  return llvm::Align(bytes);
}

Value *KernelEmitter::address(int param, const Expr &index) {
  const thir::Param &p = paramAt(param);
  if (p.kind != thir::ParamKind::Tensor)
    bug(fmt::format("memory access through non-tensor parameter '{}'", p.name));
  if (!(index->type == thir::Type{DType::Int64, 1}))
    bug("memory index is not a scalar int64");
  return b_.CreateInBoundsGEP(memType(p.dtype), fn_->getArg(static_cast<unsigned>(param)),
                              expr(index));
}

Value *KernelEmitter::expr(const Expr &e) {
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

Value *KernelEmitter::exprOp(const thir::ConstInt &c, const Node &n) {
  if (isFloat(n.type.elem))
    bug("integer constant of float type");
  return llvm::ConstantInt::get(valueType(n.type), static_cast<uint64_t>(c.value),
                                isSigned(n.type.elem));
}

Value *KernelEmitter::exprOp(const thir::Undef &, const Node &n) {
  return llvm::UndefValue::get(valueType(n.type));
}

Value *KernelEmitter::exprOp(const thir::ConstFloat &c, const Node &n) {
  // float8 has no LLVM type: the constant is its encoding, rounded here as cvt would.
  if (isFloat8(n.type.elem))
    return llvm::ConstantInt::get(valueType(n.type), float8Bits(c.value, n.type.elem));
  if (!isFloat(n.type.elem))
    bug("float constant of non-float type");
  return llvm::ConstantFP::get(valueType(n.type), c.value);
}

Value *KernelEmitter::exprOp(const thir::ParamRef &r, const Node &n) {
  const thir::Param &p = paramAt(r.index);
  if (p.kind == thir::ParamKind::Tensor || p.kind == thir::ParamKind::TensorMap)
    bug(fmt::format("tensor parameter '{}' used as a value", p.name));
  DType t = p.kind == thir::ParamKind::Dim ? DType::Int64 : p.dtype;
  if (!(n.type == thir::Type{t, 1}))
    bug(fmt::format("parameter '{}' read as {}", p.name, thir::typeString(n.type)));
  Value *arg = fn_->getArg(static_cast<unsigned>(r.index));
  return t == DType::Bool ? b_.CreateICmpNE(arg, b_.getInt8(0)) : arg;
}

Value *KernelEmitter::exprOp(const thir::VarRef &v, const Node &n) {
  const VarSlot &s = slot(v.id);
  if (!(s.type == n.type))
    bug(fmt::format("v{} read as {}", v.id, thir::typeString(n.type)));
  return b_.CreateLoad(valueType(n.type), s.alloca, fmt::format("v{}.val", v.id));
}

Value *KernelEmitter::exprOp(const thir::Binary &bin, const Node &n) {
  if (!(bin.a->type == bin.b->type))
    bug("binary operands differ in type");
  return binary(bin.op, expr(bin.a), expr(bin.b), bin.a->type);
}

Value *KernelEmitter::exprOp(const thir::Select &s, const Node &) {
  return b_.CreateSelect(expr(s.cond), expr(s.a), expr(s.b));
}

Value *KernelEmitter::exprOp(const thir::Broadcast &bc, const Node &n) {
  return b_.CreateVectorSplat(static_cast<unsigned>(n.type.lanes), expr(bc.a));
}

Value *KernelEmitter::exprOp(const thir::GlobalLoad &l, const Node &n) {
  const thir::Param &p = paramAt(l.param);
  if (p.kind != thir::ParamKind::Tensor || p.dtype != n.type.elem)
    bug(fmt::format("load of {} from parameter '{}'", thir::typeString(n.type), p.name));
  llvm::Type *ty = vec(memType(p.dtype), n.type.lanes);
  Value *v = b_.CreateAlignedLoad(ty, address(l.param, l.index), alignOf(l.alignBytes));
  if (p.dtype == DType::Bool)
    v = b_.CreateICmpNE(v, llvm::Constant::getNullValue(ty));
  return v;
}

Value *KernelEmitter::exprOp(const thir::ExtractLane &e, const Node &) {
  return b_.CreateExtractElement(expr(e.vec), static_cast<uint64_t>(e.lane));
}

Value *KernelEmitter::exprOp(const thir::MakeVector &m, const Node &n) {
  Value *out = llvm::PoisonValue::get(valueType(n.type));
  for (size_t i = 0; i < m.elems.size(); ++i)
    out = b_.CreateInsertElement(out, expr(m.elems[i]), static_cast<uint64_t>(i));
  return out;
}

Value *KernelEmitter::shuffle32(thir::ShflMode mode, Value *v, Value *arg, llvm::Type *t) {
  bool isF32 = t->isFloatTy();
  Value *r = isa_.shuffle(b_, mode, isF32 ? v : b_.CreateBitCast(v, b_.getInt32Ty()), arg);
  return isF32 ? r : b_.CreateBitCast(r, t);
}

Value *KernelEmitter::exprOp(const thir::Shfl &s, const Node &n) {
  return shuffle32(s.mode, expr(s.value), expr(s.arg), valueType(n.type));
}

Value *KernelEmitter::exprOp(const thir::ShflXor &s, const Node &n) {
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

Value *KernelEmitter::exprOp(const thir::SharedLoad &l, const Node &n) {
  auto *load = b_.CreateAlignedLoad(valueType(n.type), sharedAddress(l.byteOffset),
                                    sharedAlign(l.byteOffset, n.type));
  noteRegion(load, l.region);
  return load;
}

Value *KernelEmitter::exprOp(const thir::LdMatrix &l, const Node &n) {
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

Value *KernelEmitter::exprOp(const thir::Mfma &m, const Node &) {
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

Value *KernelEmitter::exprOp(const thir::MmaSync &m, const Node &n) {
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

Value *KernelEmitter::exprOp(const thir::SharedAddress &a, const Node &) {
  return b_.CreatePtrToInt(sharedAddress(a.byteOffset), b_.getInt32Ty());
}

Value *KernelEmitter::exprOp(const thir::Wgmma &w, const Node &n) {
  // The operands first, once: a clear that holds only at run time emits the asm twice, on two
  // branches.
  WgmmaOperands ops;
  auto *constant = w.clearAcc ? std::get_if<thir::ConstInt>(&w.clearAcc->op) : nullptr;
  const bool alwaysClear = constant && constant->value != 0;
  if (!alwaysClear)
    ops.acc = expr(w.acc);
  if (w.turn.barrier >= 0)
    std::tie(ops.own, ops.other) = turnBarriers(w.turn.barrier);
  if (w.active)
    ops.active = b_.CreateZExt(expr(w.active), b_.getInt32Ty());
  std::vector<const thir::Node *> bases;
  for (const thir::WgmmaInstr &in : w.instrs) {
    if (w.aInRegisters)
      ops.a.push_back(expr(in.a));
    else
      ops.aDesc.push_back(wgmmaDescriptor(in.a, ops, bases));
    ops.bDesc.push_back(wgmmaDescriptor(in.bDesc, ops, bases));
  }
  if (!w.clearAcc || constant)
    return wgmmaAsm(w, n, ops, alwaysClear);
  // Cleared where the condition holds (the unswitched mask's unmasked side): there the asm
  // reads no accumulator registers, so that their old values are dead (tied to the asm, they
  // would live across the loop's back edge).
  Value *cond = expr(w.clearAcc);
  auto *clearBB = llvm::BasicBlock::Create(ctx_, "wgmma.clear", fn_);
  auto *accBB = llvm::BasicBlock::Create(ctx_, "wgmma.acc", fn_);
  auto *endBB = llvm::BasicBlock::Create(ctx_, "wgmma.end", fn_);
  b_.CreateCondBr(cond, clearBB, accBB);
  b_.SetInsertPoint(clearBB);
  Value *cleared = wgmmaAsm(w, n, ops, /*clear=*/true);
  clearBB = b_.GetInsertBlock();
  b_.CreateBr(endBB);
  b_.SetInsertPoint(accBB);
  Value *accumulated = wgmmaAsm(w, n, ops, /*clear=*/false);
  accBB = b_.GetInsertBlock();
  b_.CreateBr(endBB);
  b_.SetInsertPoint(endBB);
  auto *phi = b_.CreatePHI(cleared->getType(), 2);
  phi->addIncoming(cleared, clearBB);
  phi->addIncoming(accumulated, accBB);
  return phi;
}

KernelEmitter::WgmmaOperands::Descriptor
KernelEmitter::wgmmaDescriptor(const thir::Expr &e, WgmmaOperands &ops,
                               std::vector<const thir::Node *> &bases) {
  // Lowering writes each instruction's descriptor as the first's plus a constant.
  const thir::Expr *base = &e;
  int64_t offset = 0;
  if (auto *add = std::get_if<thir::Binary>(&e->op); add && add->op == thir::BinOp::Add)
    if (auto *c = std::get_if<thir::ConstInt>(&add->b->op)) {
      base = &add->a;
      offset = c->value;
    }
  auto same = [&](const thir::Node *x) {
    auto *u = std::get_if<thir::VarRef>(&x->op), *v = std::get_if<thir::VarRef>(&(*base)->op);
    return x == base->get() || (u && v && u->id == v->id);
  };
  auto it = std::find_if(bases.begin(), bases.end(), same);
  if (it == bases.end()) {
    bases.push_back(base->get());
    ops.descriptorBases.push_back(expr(*base));
    it = bases.end() - 1;
  }
  return {static_cast<size_t>(it - bases.begin()), offset};
}

Value *KernelEmitter::wgmmaAsm(const thir::Wgmma &w, const Node &n, const WgmmaOperands &ops,
                               bool clear) {
  // One asm block from fence to wait (thir::Wgmma): the accumulators are tied operands, so no
  // code LLVM schedules can read or move them while the wgmmas are in flight. A clear has them
  // as outputs only: the first instruction writing a lane has scale-d q = 0.
  unsigned S = static_cast<unsigned>(w.acc->type.lanes);
  auto *f32 = b_.getFloatTy();
  std::vector<llvm::Type *> outTys(S, f32), inTys;
  std::vector<Value *> args;
  std::string constraints;
  for (unsigned i = 0; i < S; ++i)
    constraints += fmt::format("{}=f", i ? "," : "");
  for (unsigned i = 0; !clear && i < S; ++i) {
    constraints += fmt::format(",{}", i);
    args.push_back(b_.CreateExtractElement(ops.acc, uint64_t{i}));
    inTys.push_back(f32);
  }
  unsigned next = clear ? S : 2 * S;
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
  std::string text = fmt::format(
      "{{\n.reg .pred p{0};\n.reg .b64 da, db;\nsetp.ne.b32 p, ${1}, 0;\n{2}", clear ? ", q" : "",
      next, clear ? fmt::format("setp.eq.b32 q, ${}, 0;\n", next) : "");
  constraints += ",r";
  args.push_back(b_.getInt32(1));
  inTys.push_back(b_.getInt32Ty());
  ++next;
  // A warpgroup that does not issue (thir::Wgmma::active) branches over the group, fence to
  // wait; the condition is the same in the warpgroup, so the branch is uniform. (A guard
  // predicate on each instruction instead makes ptxas serialize every wgmma of the kernel:
  // C7520, "wgmma.mma_async instructions are serialized due to ... divergent path".)
  if (ops.active) {
    text += fmt::format(".reg .pred g;\nsetp.ne.b32 g, ${}, 0;\n@!g bra.uni tilec_skip;\n", next++);
    constraints += ",r";
    args.push_back(ops.active);
    inTys.push_back(b_.getInt32Ty());
  }
  std::vector<bool> written(S);
  // A ping-pong turn: wait for this warpgroup's before the fence, hand it over after the
  // commit (thir::Wgmma::turn).
  std::string handOver;
  if (w.turn.barrier >= 0) {
    if (w.turn.wait) {
      text += fmt::format("bar.sync ${}, 256;\n", next++);
      constraints += ",r";
      args.push_back(ops.own);
      inTys.push_back(b_.getInt32Ty());
    }
    if (w.turn.pass) {
      handOver = fmt::format("bar.arrive ${}, 256;\n", next++);
      constraints += ",r";
      args.push_back(ops.other);
      inTys.push_back(b_.getInt32Ty());
    }
  }
  // The descriptors' bases (WgmmaOperands::Descriptor), and two registers for base + offset.
  unsigned firstBase = next;
  for (Value *base : ops.descriptorBases) {
    constraints += ",l";
    args.push_back(base);
    inTys.push_back(b_.getInt64Ty());
    ++next;
  }
  auto descriptor = [&](const WgmmaOperands::Descriptor &d, const char *reg) {
    unsigned base = firstBase + static_cast<unsigned>(d.base);
    if (d.offset == 0)
      return fmt::format("${}", base);
    text += fmt::format("add.s64 {}, ${}, {};\n", reg, base, d.offset);
    return std::string(reg);
  };
  text += "wgmma.fence.sync.aligned;\n";
  for (size_t i = 0; i < w.instrs.size(); ++i) {
    const thir::WgmmaInstr &in = w.instrs[i];
    std::string d;
    for (int j = 0; j < w.n / 2; ++j)
      d += fmt::format("{}${}", j ? "," : "", in.accFirst + j);
    std::string a;
    if (w.aInRegisters) {
      for (unsigned j = 0; j < 4; ++j) {
        a += fmt::format("{}${}", j ? "," : "", next++);
        constraints += ",r";
        args.push_back(b_.CreateExtractElement(ops.a[i], uint64_t{j}));
        inTys.push_back(b_.getInt32Ty());
      }
      a = "{" + a + "}";
    } else {
      a = descriptor(ops.aDesc[i], "da");
    }
    std::string bDesc = descriptor(ops.bDesc[i], "db");
    std::string trans = !transOperands ? ""
                        : w.aInRegisters
                            ? fmt::format(", {}", int(w.bMnMajor))
                            : fmt::format(", {}, {}", int(w.aMnMajor), int(w.bMnMajor));
    // An instruction's lanes are all new or all written before: a clear of some would lose the
    // others' sums.
    int fresh = 0;
    for (int j = 0; clear && j < w.n / 2; ++j)
      if (!written[static_cast<size_t>(in.accFirst + j)]) {
        written[static_cast<size_t>(in.accFirst + j)] = true;
        ++fresh;
      }
    if (fresh != 0 && fresh != w.n / 2)
      throw std::logic_error("a clearing wgmma instruction overlaps another's accumulators");
    text += fmt::format("wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{}.{} {{{}}}, {}, {}, {}, "
                        "1, 1{};\n",
                        w.n, w.k(), aTy, bTy, d, a, bDesc, fresh ? "q" : "p", trans);
  }
  text += fmt::format("wgmma.commit_group.sync.aligned;\n{}wgmma.wait_group.sync.aligned {};\n{}}}",
                      handOver, w.pending, ops.active ? "tilec_skip:\n" : "");
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

Value *KernelEmitter::exprOp(const thir::Bitcast &bc, const Node &n) {
  return b_.CreateBitCast(expr(bc.a), valueType(n.type));
}

} // namespace tilec::codegen::detail
