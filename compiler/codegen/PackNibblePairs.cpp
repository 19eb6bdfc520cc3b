#include "codegen/PackNibblePairs.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/Transforms/Utils/Local.h>

#include <optional>
#include <vector>

namespace tilec::codegen {

namespace {

using namespace llvm::PatternMatch;

/// The byte `b` when `v` is `insertelement(insertelement(_, b & 15, 0), b >> 4, 1)` of i8s.
llvm::Value *nibblePairSource(llvm::Value *v) {
  llvm::Value *inner = nullptr, *lo = nullptr, *hi = nullptr;
  if (!match(v, m_InsertElt(m_Value(inner), m_Value(hi), m_SpecificInt(1))) ||
      !match(inner, m_InsertElt(m_Value(), m_Value(lo), m_SpecificInt(0))))
    return nullptr;
  llvm::Value *a = nullptr, *b = nullptr;
  if (!match(lo, m_And(m_Value(a), m_SpecificInt(15))) ||
      !match(hi, m_LShr(m_Value(b), m_SpecificInt(4))) || a != b || !a->getType()->isIntegerTy(8))
    return nullptr;
  return a;
}

/// A pair `{trunc(w) >> s, trunc(w >> (s + 16))}` of i16s from one i32 `w` (s < 16; `trunc(w)`
/// alone for s = 0).
struct WordFields {
  llvm::Value *word = nullptr;
  uint64_t shift = 0;
};
std::optional<WordFields> wordFieldPair(llvm::Value *v) {
  llvm::Value *inner = nullptr, *lo = nullptr, *hi = nullptr;
  if (!match(v, m_InsertElt(m_Value(inner), m_Value(hi), m_SpecificInt(1))) ||
      !match(inner, m_InsertElt(m_Value(), m_Value(lo), m_SpecificInt(0))))
    return std::nullopt;
  llvm::Value *w = nullptr, *w2 = nullptr;
  uint64_t s = 0, s2 = 0;
  if (!match(lo, m_LShr(m_Trunc(m_Value(w)), m_ConstantInt(s))) && !match(lo, m_Trunc(m_Value(w))))
    return std::nullopt;
  if (!match(hi, m_Trunc(m_LShr(m_Value(w2), m_ConstantInt(s2)))) || w != w2 ||
      !w->getType()->isIntegerTy(32) || !lo->getType()->isIntegerTy(16) || s >= 16 || s2 != s + 16)
    return std::nullopt;
  return WordFields{w, s};
}

/// Rewrites the word-field pairs of `f` (PackNibblePairsPass); whether any changed.
bool packWordFieldPairs(llvm::Function &f) {
  std::vector<std::pair<llvm::InsertElementInst *, WordFields>> found;
  for (llvm::BasicBlock &bb : f)
    for (llvm::Instruction &i : bb) {
      auto *pair = llvm::dyn_cast<llvm::InsertElementInst>(&i);
      auto *t = pair ? llvm::dyn_cast<llvm::FixedVectorType>(pair->getType()) : nullptr;
      if (!t || t->getNumElements() != 2 || !t->getElementType()->isIntegerTy(16))
        continue;
      if (auto fields = wordFieldPair(pair))
        found.push_back({pair, *fields});
    }
  for (auto &[pair, fields] : found) {
    llvm::IRBuilder<> b(pair);
    // Lane 0 is bits s..15 of w and lane 1 bits s+16..31: the 16 - s low bits of each half of
    // w >> s.
    uint32_t keep = (uint32_t{1} << (16 - fields.shift)) - 1;
    llvm::Value *both =
        b.CreateAnd(b.CreateLShr(fields.word, fields.shift), b.getInt32(keep * 0x10001u));
    pair->replaceAllUsesWith(b.CreateBitCast(both, pair->getType()));
    llvm::RecursivelyDeleteTriviallyDeadInstructions(pair);
  }
  return !found.empty();
}

} // namespace

llvm::PreservedAnalyses PackNibblePairsPass::run(llvm::Function &f,
                                                 llvm::FunctionAnalysisManager &) {
  std::vector<llvm::ZExtInst *> pairs;
  for (llvm::BasicBlock &bb : f)
    for (llvm::Instruction &i : bb)
      if (auto *z = llvm::dyn_cast<llvm::ZExtInst>(&i)) {
        auto *from = llvm::dyn_cast<llvm::FixedVectorType>(z->getSrcTy());
        auto *to = llvm::dyn_cast<llvm::FixedVectorType>(z->getDestTy());
        if (from && to && from->getNumElements() == 2 && to->getElementType()->isIntegerTy(16) &&
            nibblePairSource(z->getOperand(0)))
          pairs.push_back(z);
      }
  bool words = packWordFieldPairs(f);
  if (pairs.empty() && !words)
    return llvm::PreservedAnalyses::all();
  for (llvm::ZExtInst *z : pairs) {
    llvm::IRBuilder<> b(z);
    llvm::Value *byte = b.CreateZExt(nibblePairSource(z->getOperand(0)), b.getInt32Ty());
    // b < 256: b and b << 12 share no bit, so the multiply is their OR.
    llvm::Value *spread = b.CreateMul(byte, b.getInt32(0x1001), "", /*HasNUW=*/true,
                                      /*HasNSW=*/true);
    llvm::Value *both = b.CreateAnd(spread, b.getInt32(0x000F000F));
    llvm::Value *pair = z->getOperand(0);
    z->replaceAllUsesWith(b.CreateBitCast(both, z->getDestTy()));
    z->eraseFromParent();
    llvm::RecursivelyDeleteTriviallyDeadInstructions(pair);
  }
  llvm::PreservedAnalyses pa;
  pa.preserveSet<llvm::CFGAnalyses>();
  return pa;
}

} // namespace tilec::codegen
