#include "codegen/FuseMaskLogic.h"

#include <fmt/format.h>
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

} // namespace

llvm::PreservedAnalyses FuseMaskLogicPass::run(llvm::Function &f, llvm::FunctionAnalysisManager &) {
  std::vector<Fusable> found;
  for (llvm::BasicBlock &bb : f)
    for (llvm::Instruction &i : bb)
      if (auto fu = fusable(i))
        found.push_back(*fu);
  if (found.empty())
    return llvm::PreservedAnalyses::all();
  for (const Fusable &fu : found) {
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
