#include "codegen/MathLowering.h"

#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsAMDGPU.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>

#include <numbers>

namespace tilec::codegen::math {

using llvm::Value;

namespace {

llvm::Module &moduleOf(llvm::IRBuilder<> &b) { return *b.GetInsertBlock()->getModule(); }

// The module's triple says which instruction set the primitives below come from.
bool onAmdgpu(llvm::IRBuilder<> &b) { return moduleOf(b).getTargetTriple().isAMDGPU(); }

Value *f32(llvm::IRBuilder<> &b, double v) { return llvm::ConstantFP::get(b.getFloatTy(), v); }

// Horner evaluation with fma, highest coefficient last in `c`.
Value *horner(llvm::IRBuilder<> &b, Value *t, std::initializer_list<double> c) {
  auto it = std::rbegin(c);
  Value *acc = f32(b, *it);
  for (++it; it != std::rend(c); ++it)
    acc = callIntrinsic(b, llvm::Intrinsic::fma, {b.getFloatTy()}, {acc, t, f32(b, *it)});
  return acc;
}

Value *fabs(llvm::IRBuilder<> &b, Value *x) {
  return callIntrinsic(b, llvm::Intrinsic::fabs, {x->getType()}, {x});
}

Value *copysign(llvm::IRBuilder<> &b, Value *mag, Value *sign) {
  return callIntrinsic(b, llvm::Intrinsic::copysign, {mag->getType()}, {mag, sign});
}

} // namespace

Value *callIntrinsic(llvm::IRBuilder<> &b, llvm::Intrinsic::ID id,
                     llvm::ArrayRef<llvm::Type *> overloads, llvm::ArrayRef<Value *> args) {
  llvm::Function *fn = llvm::Intrinsic::getOrInsertDeclaration(&moduleOf(b), id, overloads);
  return b.CreateCall(fn, args);
}

namespace {

// Halving a float is exact, so x / 2 may be folded into the multiply by a constant that
// computed x: a * c becomes a * (c / 2), a * c - m * c becomes a * (c / 2) - m * (c / 2).
// True when that costs no instruction more than x itself.
bool halvesForFree(Value *x, int depth = 3) {
  if (auto *c = llvm::dyn_cast<llvm::ConstantFP>(x)) {
    // Only where the half is exact: not a subnormal's last bit.
    const llvm::APFloat &v = c->getValueAPF();
    return v.isZero() || (v.isFiniteNonZero() && llvm::ilogb(v) > -126);
  }
  auto *inst = llvm::dyn_cast<llvm::Instruction>(x);
  if (!inst || depth == 0)
    return false;
  switch (inst->getOpcode()) {
  case llvm::Instruction::FMul:
    // Only where that constant halves exactly (halvesForFree of a subnormal one is false).
    return (llvm::isa<llvm::ConstantFP>(inst->getOperand(0)) &&
            halvesForFree(inst->getOperand(0), 0)) ||
           (llvm::isa<llvm::ConstantFP>(inst->getOperand(1)) &&
            halvesForFree(inst->getOperand(1), 0));
  case llvm::Instruction::FNeg:
    return halvesForFree(inst->getOperand(0), depth - 1);
  case llvm::Instruction::FAdd:
  case llvm::Instruction::FSub:
    return halvesForFree(inst->getOperand(0), depth - 1) &&
           halvesForFree(inst->getOperand(1), depth - 1);
  default:
    return false;
  }
}

// x / 2, folded into x's own multiplies by constants where halvesForFree says so. The new
// instructions keep the fast-math flags (contraction) of those they replace.
Value *halved(llvm::IRBuilder<> &b, Value *x) {
  if (!halvesForFree(x))
    return b.CreateFMul(x, f32(b, 0.5));
  if (auto *c = llvm::dyn_cast<llvm::ConstantFP>(x)) {
    llvm::APFloat v = c->getValueAPF();
    v.divide(llvm::APFloat(v.getSemantics(), "2"), llvm::APFloat::rmNearestTiesToEven);
    return llvm::ConstantFP::get(x->getType(), v);
  }
  auto *inst = llvm::cast<llvm::Instruction>(x);
  Value *lhs = inst->getOperand(0);
  switch (inst->getOpcode()) {
  case llvm::Instruction::FMul: {
    Value *rhs = inst->getOperand(1);
    if (!(llvm::isa<llvm::ConstantFP>(rhs) && halvesForFree(rhs, 0)))
      std::swap(lhs, rhs);
    return b.CreateFMulFMF(lhs, halved(b, rhs), inst);
  }
  case llvm::Instruction::FNeg:
    return b.CreateFNegFMF(halved(b, lhs), inst);
  case llvm::Instruction::FAdd:
    return b.CreateFAddFMF(halved(b, lhs), halved(b, inst->getOperand(1)), inst);
  default:
    return b.CreateFSubFMF(halved(b, lhs), halved(b, inst->getOperand(1)), inst);
  }
}

} // namespace

Value *exp2(llvm::IRBuilder<> &b, Value *x, bool flushSubnormals) {
  if (onAmdgpu(b)) {
    // v_exp_f32 flushes subnormal results; llvm.exp2 is expanded with the range scaling.
    if (flushSubnormals)
      return callIntrinsic(b, llvm::Intrinsic::amdgcn_exp2, {b.getFloatTy()}, {x});
    return callIntrinsic(b, llvm::Intrinsic::exp2, {b.getFloatTy()}, {x});
  }
  if (flushSubnormals)
    return callIntrinsic(b, llvm::Intrinsic::nvvm_ex2_approx_ftz, {b.getFloatTy()}, {x});
  // ex2.approx.f32 without ftz costs three instructions besides the MUFU.EX2 (ptxas scales
  // arguments below -126 and the result). The square of 2^(x/2) by the flushing form is
  // 2^x over the whole range at one multiply, with x/2 folded into the multiply that made x
  // where there is one (attention's s * scale - m * scale): for x in [-252, -126) the half
  // is a normal number whose square rounds to the subnormal (or 0) result; x >= 128 squares
  // to infinity as it should. The error doubles, from about 2 to about 4 ulp.
  Value *root =
      callIntrinsic(b, llvm::Intrinsic::nvvm_ex2_approx_ftz, {b.getFloatTy()}, {halved(b, x)});
  return b.CreateFMul(root, root);
}

Value *exp(llvm::IRBuilder<> &b, Value *x, bool flushSubnormals) {
  // x * log2(e); where x is itself y * c (or -(y * c)) for a constant c, y * (c log2(e)) with
  // the constant folded in double: one rounding fewer and one multiply fewer (GELU's argument).
  Value *y = x;
  double c = 1.0;
  auto *neg = llvm::dyn_cast<llvm::UnaryOperator>(x);
  if (neg && neg->getOpcode() == llvm::Instruction::FNeg) {
    y = neg->getOperand(0);
    c = -1.0;
  }
  auto *mul = llvm::dyn_cast<llvm::BinaryOperator>(y);
  if (mul && mul->getOpcode() == llvm::Instruction::FMul) {
    for (int i : {0, 1}) {
      if (auto *k = llvm::dyn_cast<llvm::ConstantFP>(mul->getOperand(i))) {
        double folded = c * k->getValueAPF().convertToFloat() * std::numbers::log2e;
        return exp2(b, b.CreateFMul(mul->getOperand(1 - i), f32(b, folded)), flushSubnormals);
      }
    }
  }
  return exp2(b, b.CreateFMul(x, f32(b, std::numbers::log2e)), flushSubnormals);
}

Value *log2(llvm::IRBuilder<> &b, Value *x) {
  if (onAmdgpu(b)) // v_log_f32, with subnormal inputs scaled by the backend
    return callIntrinsic(b, llvm::Intrinsic::log2, {b.getFloatTy()}, {x});
  return callIntrinsic(b, llvm::Intrinsic::nvvm_lg2_approx_f, {}, {x});
}

Value *log(llvm::IRBuilder<> &b, Value *x) {
  return b.CreateFMul(log2(b, x), f32(b, std::numbers::ln2));
}

Value *rsqrt(llvm::IRBuilder<> &b, Value *x) {
  if (onAmdgpu(b))
    return callIntrinsic(b, llvm::Intrinsic::amdgcn_rsq, {b.getFloatTy()}, {x});
  return callIntrinsic(b, llvm::Intrinsic::nvvm_rsqrt_approx_f, {}, {x});
}

namespace {

// +0, a positive number, +inf or NaN: what exp2 and a square return.
bool neverNegative(Value *v, int depth = 4) {
  if (auto *c = llvm::dyn_cast<llvm::ConstantFP>(v))
    return !c->isNegative();
  if (depth == 0)
    return false;
  if (auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(v)) {
    llvm::Intrinsic::ID id = call->getIntrinsicID();
    return id == llvm::Intrinsic::nvvm_ex2_approx_ftz || id == llvm::Intrinsic::amdgcn_exp2 ||
           id == llvm::Intrinsic::exp2 || id == llvm::Intrinsic::fabs;
  }
  auto *mul = llvm::dyn_cast<llvm::BinaryOperator>(v);
  if (!mul || mul->getOpcode() != llvm::Instruction::FMul)
    return false;
  Value *x = mul->getOperand(0), *y = mul->getOperand(1);
  return x == y || (neverNegative(x, depth - 1) && neverNegative(y, depth - 1));
}

// A constant at least 1 whose quarter is exact.
bool atLeastOne(Value *v) {
  auto *c = llvm::dyn_cast<llvm::ConstantFP>(v);
  return c && c->getType()->isFloatTy() && c->getValueAPF().isFinite() &&
         c->getValueAPF().convertToFloat() >= 1.0f;
}

// c / 4 in one instruction when c is k + x or x * m + k for a constant k >= 1 and x, m never
// negative (sigmoid's 1 + e^-x): c >= 1, so c / 4 >= 0.25 is a normal number and rounding c or
// c / 4 is the same up to the exact scaling. Null otherwise.
Value *quarterOfAtLeastOne(llvm::IRBuilder<> &b, Value *c) {
  Value *x = nullptr, *m = f32(b, 1.0), *k = nullptr;
  if (auto *add = llvm::dyn_cast<llvm::BinaryOperator>(c);
      add && add->getOpcode() == llvm::Instruction::FAdd) {
    for (int i = 0; i < 2 && !k; ++i)
      if (atLeastOne(add->getOperand(i)) && neverNegative(add->getOperand(1 - i))) {
        k = add->getOperand(i);
        x = add->getOperand(1 - i);
      }
  } else if (auto *fma = llvm::dyn_cast<llvm::IntrinsicInst>(c);
             fma && fma->getIntrinsicID() == llvm::Intrinsic::fma &&
             atLeastOne(fma->getOperand(2))) {
    auto *mc = llvm::dyn_cast<llvm::ConstantFP>(fma->getOperand(1));
    // m / 4 must be exact too: not within 2 binades of the subnormals.
    if (mc && neverNegative(mc) && neverNegative(fma->getOperand(0)) &&
        (mc->isZero() || llvm::ilogb(mc->getValueAPF()) > -125)) {
      x = fma->getOperand(0);
      m = mc;
      k = fma->getOperand(2);
    }
  }
  if (!k)
    return nullptr;
  return callIntrinsic(b, llvm::Intrinsic::fma, {b.getFloatTy()},
                       {x, b.CreateFMul(m, f32(b, 0.25)), b.CreateFMul(k, f32(b, 0.25))});
}

} // namespace

/// a / c by div.full.f32: within 2 ulp over the full range (c = inf gives 0), without
/// div.rn's slow path; the functions below are accurate to far fewer bits than that costs.
Value *divFull(llvm::IRBuilder<> &b, Value *a, Value *c) {
  if (onAmdgpu(b)) {
    // An fdiv that may be 2.5 ulp off: the backend's v_rcp_f32 form with its range scaling.
    auto *d = llvm::cast<llvm::Instruction>(b.CreateFDiv(a, c));
    d->setMetadata(llvm::LLVMContext::MD_fpmath, llvm::MDBuilder(b.getContext()).createFPMath(2.5));
    return d;
  }
  return callIntrinsic(b, llvm::Intrinsic::nvvm_div_full, {}, {a, c});
}

Value *divide(llvm::IRBuilder<> &b, Value *a, Value *c) {
  // div.full.f32 scales a and c by 1/4 when |c| > 2^126 (a compare and two predicated
  // multiplies around MUFU.RCP). A c known to be at least 1 is always scaled instead: the same
  // products, so the same result, except that a below 2^-124 in magnitude loses its last bits
  // to the scaling (an error of at most 2^-147 more). A constant a scales for free.
  if (Value *quarter = quarterOfAtLeastOne(b, c))
    return b.CreateFMul(
        b.CreateFMul(a, f32(b, 0.25)),
        onAmdgpu(b) ? callIntrinsic(b, llvm::Intrinsic::amdgcn_rcp, {b.getFloatTy()}, {quarter})
                    : callIntrinsic(b, llvm::Intrinsic::nvvm_rcp_approx_ftz_f, {}, {quarter}));
  return divFull(b, a, c);
}

Value *tanh(llvm::IRBuilder<> &b, Value *x, bool fast) {
  // AMD has no tanh instruction: the accurate form serves --fast-math too.
  if (fast && !onAmdgpu(b)) {
    auto *fnTy = llvm::FunctionType::get(b.getFloatTy(), {b.getFloatTy()}, false);
    auto *asmFn = llvm::InlineAsm::get(fnTy, "tanh.approx.f32 $0, $1;", "=f,f",
                                       /*hasSideEffects=*/false);
    return b.CreateCall(asmFn, {x});
  }
  // Near 0, 1 - 2/(e^2x + 1) cancels; an odd polynomial (least-squares fit of
  // (tanh(x) - x) / x^3 on [0, 0.55], relative error 4e-9) covers that range instead.
  Value *ax = fabs(b, x);
  // e >= 1: never subnormal, the flushing form is exact.
  Value *e = exp2(b, b.CreateFMul(ax, f32(b, 2.0 * std::numbers::log2e)), true);
  Value *big = b.CreateFSub(f32(b, 1.0), divide(b, f32(b, 2.0), b.CreateFAdd(e, f32(b, 1.0))));
  big = copysign(b, big, x);
  Value *x2 = b.CreateFMul(x, x);
  Value *p = horner(b, x2,
                    {-0.3333333197092931, 0.13333109897652484, -0.05390880472153728,
                     0.021306119844639298, -0.006604862668877099});
  Value *small =
      callIntrinsic(b, llvm::Intrinsic::fma, {b.getFloatTy()}, {b.CreateFMul(p, x2), x, x});
  return b.CreateSelect(b.CreateFCmpOLT(ax, f32(b, 0.55)), small, big);
}

Value *erf(llvm::IRBuilder<> &b, Value *x) {
  // |x| < 1: x * P(x^2), a least-squares fit of erf(x)/x (relative error 1.3e-9).
  // |x| >= 1: Abramowitz & Stegun 7.1.26 (relative error 1.5e-7 there, where erf >= 0.84).
  Value *ax = fabs(b, x);
  Value *x2 = b.CreateFMul(x, x);
  Value *small = b.CreateFMul(
      x, horner(b, x2,
                {1.128379165678643, -0.3761262549825006, 0.11283581502675004, -0.02685366104623955,
                 0.005188043349943352, -0.0008007711896401164, 7.845710156108486e-05}));
  Value *t = divide(b, f32(b, 1.0),
                    callIntrinsic(b, llvm::Intrinsic::fma, {b.getFloatTy()},
                                  {ax, f32(b, 0.3275911), f32(b, 1.0)}));
  Value *poly = b.CreateFMul(
      t, horner(b, t, {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429}));
  // poly < 1.2, so poly * e for a subnormal e vanishes in 1 - poly * e: flushing changes nothing.
  Value *big = b.CreateFSub(f32(b, 1.0), b.CreateFMul(poly, exp(b, b.CreateFNeg(x2), true)));
  big = copysign(b, big, x);
  // Written so that NaN takes the `big` arm, which propagates it.
  return b.CreateSelect(b.CreateFCmpOLT(ax, f32(b, 1.0)), small, big);
}

Value *sigmoid(llvm::IRBuilder<> &b, Value *x, bool fast) {
  // One MUFU.TANH and two multiply-adds: 1/(1+e^-x) = 0.5 + 0.5 tanh(x/2).
  if (fast && !onAmdgpu(b))
    return b.CreateFAdd(f32(b, 0.5),
                        b.CreateFMul(f32(b, 0.5), tanh(b, b.CreateFMul(x, f32(b, 0.5)), true)));
  // A subnormal e^-x vanishes in 1 + e^-x: flushing changes nothing.
  return divide(b, f32(b, 1.0), b.CreateFAdd(f32(b, 1.0), exp(b, b.CreateFNeg(x), true)));
}

Value *floor(llvm::IRBuilder<> &b, Value *x) {
  return callIntrinsic(b, llvm::Intrinsic::floor, {x->getType()}, {x});
}

Value *pow(llvm::IRBuilder<> &b, Value *a, Value *e) {
  Value *r = exp2(b, b.CreateFMul(e, log2(b, fabs(b, a))));
  Value *eIsInt = b.CreateFCmpOEQ(floor(b, e), e);
  Value *half = b.CreateFMul(e, f32(b, 0.5));
  Value *eIsOdd = b.CreateAnd(eIsInt, b.CreateFCmpUNE(floor(b, half), half));
  Value *aNeg = b.CreateFCmpOLT(a, f32(b, 0.0));
  r = b.CreateSelect(b.CreateAnd(aNeg, eIsOdd), b.CreateFNeg(r), r);
  r = b.CreateSelect(b.CreateAnd(aNeg, b.CreateNot(eIsInt)),
                     llvm::ConstantFP::getNaN(b.getFloatTy()), r);
  // pow(x, 0) is 1 even for x = 0, inf and NaN, where 0 * log2(x) would give NaN.
  return b.CreateSelect(b.CreateFCmpOEQ(e, f32(b, 0.0)), f32(b, 1.0), r);
}

} // namespace tilec::codegen::math
