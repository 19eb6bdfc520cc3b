#include "codegen/FuseMaskLogic.h"

#include <fmt/format.h>
#include <llvm/ADT/APFloat.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/Transforms/Utils/Local.h>

#include <optional>
#include <vector>

namespace tilec::codegen {

namespace {

using namespace llvm::PatternMatch;

struct Fusable {
  llvm::BinaryOperator *logic; // the xor or or
  llvm::Value *x;
  uint32_t mask, constant;
};

/// The 32 bits of `c`: an i32 constant, or a <2 x i16> constant (lane 0 low).
std::optional<uint32_t> bits32(llvm::Value *c) {
  if (auto *i = llvm::dyn_cast<llvm::ConstantInt>(c))
    return i->getType()->isIntegerTy(32) ? std::optional<uint32_t>(uint32_t(i->getZExtValue()))
                                         : std::nullopt;
  auto *v = llvm::dyn_cast<llvm::Constant>(c);
  auto *t = v ? llvm::dyn_cast<llvm::FixedVectorType>(v->getType()) : nullptr;
  if (!t || t->getNumElements() != 2 || !t->getElementType()->isIntegerTy(16))
    return std::nullopt;
  uint32_t out = 0;
  for (unsigned l = 0; l < 2; ++l) {
    auto *e = llvm::dyn_cast_or_null<llvm::ConstantInt>(v->getAggregateElement(l));
    if (!e)
      return std::nullopt;
    out |= uint32_t(e->getZExtValue() & 0xFFFF) << (16 * l);
  }
  return out;
}

bool is32Bits(llvm::Type *t) { return t->getPrimitiveSizeInBits() == 32 && !t->isFloatTy(); }

std::optional<Fusable> fusable(llvm::Instruction &i) {
  // Packed 16-bit lanes only (the SLP vectorizer's pairs of weights): a scalar mask and flip,
  // such as an mbarrier phase's `(i & 1) ^ 1`, is left to ptxas (fused, it cost bf16 D64 causal
  // attention 1.5% on the H200, docs/results.md 2026-12-04).
  auto *logic = llvm::dyn_cast<llvm::BinaryOperator>(&i);
  auto *lanes = logic ? llvm::dyn_cast<llvm::FixedVectorType>(logic->getType()) : nullptr;
  if (!lanes || lanes->getNumElements() != 2 || !lanes->getElementType()->isIntegerTy(16) ||
      (logic->getOpcode() != llvm::Instruction::Xor && logic->getOpcode() != llvm::Instruction::Or))
    return std::nullopt;
  auto constant = bits32(logic->getOperand(1));
  if (!constant)
    return std::nullopt;
  // The masks (and bit casts between i32 and <2 x i16>) the logic op's operand went through,
  // each used only on the way: their constants combine into one mask.
  uint32_t mask = ~0u;
  bool masked = false;
  llvm::Value *x = logic->getOperand(0);
  while (x->hasOneUse()) {
    if (auto *cast = llvm::dyn_cast<llvm::BitCastInst>(x); cast && is32Bits(cast->getSrcTy())) {
      x = cast->getOperand(0);
      continue;
    }
    auto *a = llvm::dyn_cast<llvm::BinaryOperator>(x);
    auto c =
        a && a->getOpcode() == llvm::Instruction::And ? bits32(a->getOperand(1)) : std::nullopt;
    if (!c)
      break;
    mask &= *c;
    masked = true;
    x = a->getOperand(0);
  }
  if (!masked || !is32Bits(x->getType()))
    return std::nullopt;
  return Fusable{logic, x, mask, *constant};
}

/// The float16 constant `c` of both lanes of a <2 x half> splat.
std::optional<llvm::APFloat> halfSplat(llvm::Value *c) {
  auto *k = llvm::dyn_cast<llvm::Constant>(c);
  auto *f = k ? llvm::dyn_cast_or_null<llvm::ConstantFP>(k->getSplatValue()) : nullptr;
  if (!f || !f->getType()->isHalfTy())
    return std::nullopt;
  return f->getValueAPF();
}

/// `v + c` for an fadd or fsub of `v` by a float16 splat (c negated for fsub), or nullopt.
std::optional<llvm::APFloat> addedConstant(llvm::Instruction *user, llvm::Value *v) {
  auto *op = llvm::dyn_cast<llvm::BinaryOperator>(user);
  if (!op || !op->getType()->isVectorTy())
    return std::nullopt;
  if (op->getOpcode() == llvm::Instruction::FAdd) {
    llvm::Value *other = op->getOperand(0) == v ? op->getOperand(1) : op->getOperand(0);
    return other == v ? std::nullopt : halfSplat(other);
  }
  if (op->getOpcode() == llvm::Instruction::FSub && op->getOperand(0) == v) {
    auto c = halfSplat(op->getOperand(1));
    if (c)
      c->changeSign();
    return c;
  }
  return std::nullopt;
}

/// A float16 field read at bit 4 instead of bit 0 (FuseMaskLogic.h): rewrites `fu` and the
/// additions after it when they qualify.
void readFieldUnshifted(Fusable &fu) {
  // x = w >> s with 4 <= s <= 12, so that bits s..s+3 of each half of w are bits 4..7 of the
  // halves of w >> (s - 4).
  llvm::Value *w = nullptr;
  uint64_t s = 0;
  if (!match(fu.x, m_LShr(m_Value(w), m_ConstantInt(s))) || !w->getType()->isIntegerTy(32) ||
      s < 4 || s > 12)
    return;
  // The same field in both lanes, at most 4 bits; the constant is float16 1024 (0x6400) in both
  // lanes with at most the field's bits of its mantissa set.
  const uint32_t lane = fu.mask & 0xFFFF, c = fu.constant & 0xFFFF;
  if (fu.mask >> 16 != lane || lane > 15 || fu.constant >> 16 != c || (c & 0xFC00) != 0x6400 ||
      (c & 0x03FF & ~lane) != 0)
    return;
  // The shift pays only where it goes away: for s = 4, or where w >> (s - 4) is computed anyway
  // (pairs of nibbles 16 bits apart, as Marlin packs them: fields at 0 and 4, then at 8 and 12).
  llvm::Value *unshifted = s == 4 ? w : nullptr;
  bool shared = s == 4;
  for (llvm::User *u : w->users()) {
    if (!match(u, m_LShr(m_Specific(w), m_SpecificInt(s - 4))))
      continue;
    shared = true;
    auto *i = llvm::cast<llvm::Instruction>(u);
    if (i->getParent() == fu.logic->getParent() && i->comesBefore(fu.logic))
      unshifted = i;
  }
  if (!shared)
    return;
  // Every use reads the lanes as float16 values v = 1024 + q and adds a constant: with the field
  // at bit 4 the lanes are v' = 1024 + 16q, and fma(v', 1/16, 960 + C) is exactly v + C, rounded
  // once as the addition was, when 960 + C is a float16.
  struct Rewrite {
    llvm::Instruction *add;
    llvm::Value *lanes; // the bit cast it reads
    llvm::APFloat c2;
  };
  std::vector<Rewrite> adds;
  for (llvm::User *u : fu.logic->users()) {
    auto *cast = llvm::dyn_cast<llvm::BitCastInst>(u);
    auto *t = cast ? llvm::dyn_cast<llvm::FixedVectorType>(cast->getType()) : nullptr;
    if (!t || !t->getElementType()->isHalfTy())
      return;
    for (llvm::User *cu : cast->users()) {
      auto *add = llvm::dyn_cast<llvm::Instruction>(cu);
      auto c = add ? addedConstant(add, cast) : std::nullopt;
      if (!c)
        return;
      llvm::APFloat c2(llvm::APFloat::IEEEhalf(), 960);
      if (c2.add(*c, llvm::APFloat::rmNearestTiesToEven) != llvm::APFloat::opOK)
        return;
      adds.push_back({add, cast, c2});
    }
  }
  if (adds.empty())
    return;
  llvm::IRBuilder<> b(fu.logic);
  // (A shift computed later or elsewhere is computed again here; the code generator's CSE and
  // ptxas merge the two.)
  fu.x = unshifted ? unshifted : b.CreateLShr(w, s - 4);
  fu.mask <<= 4;
  fu.constant = (fu.constant & ~(lane * 0x10001u)) | ((fu.constant & lane * 0x10001u) << 4);
  for (auto &[add, lanes, c2] : adds) {
    llvm::IRBuilder<> ab(add);
    auto *t = add->getType();
    llvm::Value *r =
        ab.CreateIntrinsic(llvm::Intrinsic::fma, {t},
                           {lanes, llvm::ConstantFP::get(t, 0.0625), llvm::ConstantFP::get(t, c2)});
    add->replaceAllUsesWith(r);
    add->eraseFromParent();
  }
}

} // namespace

llvm::PreservedAnalyses FuseMaskLogicPass::run(llvm::Function &f, llvm::FunctionAnalysisManager &) {
  std::vector<Fusable> found;
  for (llvm::BasicBlock &bb : f)
    for (llvm::Instruction &i : bb)
      if (auto fu = fusable(i))
        found.push_back(*fu);
  if (found.empty())
    return llvm::PreservedAnalyses::all();
  for (Fusable &fu : found) {
    readFieldUnshifted(fu);
    llvm::IRBuilder<> b(fu.logic);
    // lop3's truth table over a = 0xF0, b = 0xCC, c = 0xAA: (a & b) ^ c or (a & b) | c.
    const bool isXor = fu.logic->getOpcode() == llvm::Instruction::Xor;
    const unsigned lut = isXor ? (0xF0 & 0xCC) ^ 0xAA : (0xF0 & 0xCC) | 0xAA;
    auto *i32 = b.getInt32Ty();
    auto *fnTy = llvm::FunctionType::get(i32, {i32, i32, i32}, false);
    auto *asmFn = llvm::InlineAsm::get(fnTy, fmt::format("lop3.b32 $0, $1, $2, $3, {:#x};", lut),
                                       "=r,r,n,n", /*hasSideEffects=*/false);
    llvm::Value *x = fu.x->getType() == i32 ? fu.x : b.CreateBitCast(fu.x, i32);
    llvm::Value *r = b.CreateCall(asmFn, {x, b.getInt32(fu.mask), b.getInt32(fu.constant)});
    if (r->getType() != fu.logic->getType())
      r = b.CreateBitCast(r, fu.logic->getType());
    fu.logic->replaceAllUsesWith(r);
    llvm::RecursivelyDeleteTriviallyDeadInstructions(fu.logic);
  }
  llvm::PreservedAnalyses pa;
  pa.preserveSet<llvm::CFGAnalyses>();
  return pa;
}

} // namespace tilec::codegen
