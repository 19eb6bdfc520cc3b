// Scalar float32 math for NVPTX, built from the instructions the hardware has (ex2.approx,
// lg2.approx, rsqrt.approx) because LLVM's llvm.exp/llvm.log do not lower on NVPTX.
// Internal to the codegen library.
#pragma once

#include <llvm/IR/IRBuilder.h>

namespace tilec::codegen::math {

/// Every function takes and returns a scalar `float` value.
/// `flushSubnormals`: a subnormal result is 0 (ex2.approx.ftz.f32, as nvcc's --use_fast_math).
llvm::Value *exp2(llvm::IRBuilder<> &b, llvm::Value *x, bool flushSubnormals = false);
llvm::Value *exp(llvm::IRBuilder<> &b, llvm::Value *x, bool flushSubnormals = false);
llvm::Value *log2(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *log(llvm::IRBuilder<> &b, llvm::Value *x);
llvm::Value *rsqrt(llvm::IRBuilder<> &b, llvm::Value *x);
/// Accurate to ~1e-6 relative; `fast` uses tanh.approx.f32 (~2^-11 relative) instead.
llvm::Value *tanh(llvm::IRBuilder<> &b, llvm::Value *x, bool fast);
llvm::Value *erf(llvm::IRBuilder<> &b, llvm::Value *x);
/// 1 / (1 + e^-x); `fast` uses tanh.approx.f32 (~2^-11 relative).
llvm::Value *sigmoid(llvm::IRBuilder<> &b, llvm::Value *x, bool fast);
/// a / c by div.full.f32 (at most 2 ulp), or, when c is 1 + e^y or another sum of a constant
/// of at least 1 and a value never negative, by the same scaled reciprocal without its range
/// check.
llvm::Value *divide(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *c);
/// Works for float and double (and vectors of them).
llvm::Value *floor(llvm::IRBuilder<> &b, llvm::Value *x);
/// a ** b through exp2/log2; the limits are documented in Codegen.h.
llvm::Value *pow(llvm::IRBuilder<> &b, llvm::Value *a, llvm::Value *e);

/// Calls an intrinsic by ID (never by name: a misspelled nvvm name would silently become an
/// external call).
llvm::Value *callIntrinsic(llvm::IRBuilder<> &b, llvm::Intrinsic::ID id,
                           llvm::ArrayRef<llvm::Type *> overloads,
                           llvm::ArrayRef<llvm::Value *> args);

} // namespace tilec::codegen::math
