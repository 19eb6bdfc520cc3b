// A peephole after LLVM's optimizer for packed 4-bit weights: the two nibbles of one byte
// zero-extended into a <2 x i16> pair (what the SLP vectorizer makes of std.quant's unpacking of a
// byte's low and high weight) become one multiply and one mask of the 32-bit word; two fields 16
// bits apart in a 32-bit word (weights packed so that a pair's nibbles are 4 apart, as Marlin
// packs them) become one shift of the word.
#pragma once

#include <llvm/IR/PassManager.h>

namespace tilec::codegen {

/// Rewrites `zext <2 x i8> {b & 15, b >> 4} to <2 x i16>` as the bit cast of
/// `(zext(b) * 0x1001) & 0x000F000F`: the low nibble lands in bits 0-3, the high one in bits
/// 16-19, without splitting the byte and packing the halves again (an and, a shift and a byte
/// permute on the GPU, against a multiply and a mask that FuseMaskLogicPass merges with the next
/// logic op).
///
/// Also rewrites the pair `{trunc(w) >> s, trunc(w >> (s + 16))}` of i16s from one i32 `w` as
/// the bit cast of `(w >> s) & (2^(16 - s) - 1) * 0x10001`: a shift and a mask (which
/// FuseMaskLogicPass merges with the next logic op) instead of two shifts, a conversion and a pack.
class PackNibblePairsPass : public llvm::PassInfoMixin<PackNibblePairsPass> {
public:
  llvm::PreservedAnalyses run(llvm::Function &f, llvm::FunctionAnalysisManager &);
};

} // namespace tilec::codegen
