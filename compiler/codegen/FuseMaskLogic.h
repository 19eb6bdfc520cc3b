// A peephole after LLVM's optimizer: a mask by a constant followed by an xor or or with another
// constant, `(x & C1) ^ C2` (the int4 -> float16 magic-number conversion of std.quant: the
// weights' nibbles masked into the mantissa, the exponent xor-ed in), becomes one PTX `lop3.b32`.
// ptxas does not merge the two itself when both constants are immediates (a SASS LOP3 has one
// immediate operand): it emitted two LOP3 per pair of weights, a third of the W4A16 kernels'
// instructions; given one lop3 with two immediates it keeps one in a register and emits one.
#pragma once

#include <llvm/IR/PassManager.h>

namespace tilec::codegen {

/// Rewrites `(x & C1) op C2` for op xor or or on <2 x i16> as `lop3.b32 d, x, C1, C2, LUT`,
/// where x (i32 or <2 x i16>) went through one or more masks (their constants combined) and bit
/// casts between the two types, each used only on the way.
class FuseMaskLogicPass : public llvm::PassInfoMixin<FuseMaskLogicPass> {
public:
  llvm::PreservedAnalyses run(llvm::Function &f, llvm::FunctionAnalysisManager &);
};

} // namespace tilec::codegen
