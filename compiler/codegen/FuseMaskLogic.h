// A peephole after LLVM's optimizer: a mask by a constant followed by an xor or or with another
// constant, `(x & C1) ^ C2` (the int4 -> float16 magic-number conversion of std.quant: the
// weights' nibbles masked into the mantissa, the exponent xor-ed in), becomes one PTX `lop3.b32`.
// ptxas does not merge the two itself when both constants are immediates (a SASS LOP3 has one
// immediate operand): it emitted two LOP3 per pair of weights, a third of the W4A16 kernels'
// instructions; given one lop3 with two immediates it keeps one in a register and emits one.
//
// Before fusing, a 4-bit field shifted down from bit s (4 <= s <= 12) and converted to float16
// by the magic number 1024 is read in place at bit 4 instead, where the word shifted by s - 4 is
// computed anyway (Marlin's packing: fields 0, 4 | 1, 5 | 2, 6 | 3, 7 of a word in four pairs,
// whose shifts by 4, 8 and 12 become one by 8): the lanes are then 1024 + 16q instead of
// 1024 + q, and each `v + C` that reads them becomes fma(v, 1/16, 960 + C), the same value
// rounded once (v / 16 is exact), where 960 + C is a float16. Two of a word's three shifts go.
#pragma once

#include <llvm/IR/PassManager.h>

namespace tilec::codegen {

/// Rewrites `(x & C1) op C2` for op xor or or on <2 x i16> as `lop3.b32 d, x, C1, C2, LUT`,
/// where x (i32 or <2 x i16>) went through one or more masks (their constants combined) and bit
/// casts between the two types, each used only on the way; reads a field of `x = w >> s` at bit 4
/// of `w >> (s - 4)` when every use of the result is a float16 addition of a constant (above).
class FuseMaskLogicPass : public llvm::PassInfoMixin<FuseMaskLogicPass> {
public:
  llvm::PreservedAnalyses run(llvm::Function &f, llvm::FunctionAnalysisManager &);
};

} // namespace tilec::codegen
