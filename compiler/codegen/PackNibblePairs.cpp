#include "codegen/PackNibblePairs.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/PatternMatch.h>
#include <llvm/Transforms/Utils/Local.h>

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
  if (pairs.empty())
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
