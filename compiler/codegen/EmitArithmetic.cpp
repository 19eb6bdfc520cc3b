// KernelEmitter's arithmetic: unary and binary operators, the exponentials, casts and float8
// conversions.
#include "codegen/KernelEmitter.h"

#include "codegen/MathLowering.h"

#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

namespace tilec::codegen::detail {

std::string_view unOpName(thir::UnOp op) {
  using thir::UnOp;
  switch (op) {
  case UnOp::Neg:
    return "neg";
  case UnOp::Not:
    return "not";
  case UnOp::Abs:
    return "abs";
  case UnOp::Exp:
    return "exp";
  case UnOp::Exp2:
    return "exp2";
  case UnOp::Log:
    return "log";
  case UnOp::Log2:
    return "log2";
  case UnOp::Sqrt:
    return "sqrt";
  case UnOp::Rsqrt:
    return "rsqrt";
  case UnOp::Tanh:
    return "tanh";
  case UnOp::Erf:
    return "erf";
  case UnOp::Sigmoid:
    return "sigmoid";
  case UnOp::Floor:
    return "floor";
  case UnOp::Ceil:
    return "ceil";
  case UnOp::BitNot:
    return "bitnot";
  }
  return "?";
}

Value *KernelEmitter::unary(thir::UnOp op, Value *a, thir::Type t) {
  using thir::UnOp;
  DType et = t.elem;
  if (isFloat8(et)) {
    // float8 has no arithmetic of its own: in float32, rounded back once.
    thir::Type f32{DType::Float32, t.lanes};
    return cast(unary(op, cast(a, t, f32), f32), f32, t);
  }
  switch (op) {
  case UnOp::Neg:
    return isFloat(et) ? b_.CreateFNeg(a) : b_.CreateNeg(a);
  case UnOp::Not:
  case UnOp::BitNot:
    return b_.CreateNot(a);
  case UnOp::Abs:
    if (isFloat(et))
      return math::callIntrinsic(b_, llvm::Intrinsic::fabs, {a->getType()}, {a});
    if (!isSigned(et))
      return a;
    return math::callIntrinsic(b_, llvm::Intrinsic::abs, {a->getType()}, {a, b_.getFalse()});
  default:
    break;
  }
  if (!isFloat(et))
    bug(fmt::format("{} on {}", unOpName(op), dtypeName(et)));
  if (et == DType::Float64) {
    if (!thir::hasFloat64(op))
      unsupported(fmt::format("{} on float64", unOpName(op)));
    switch (op) {
    case UnOp::Sqrt:
      return math::callIntrinsic(b_, llvm::Intrinsic::sqrt, {a->getType()}, {a});
    case UnOp::Rsqrt:
      return b_.CreateFDiv(llvm::ConstantFP::get(a->getType(), 1.0),
                           math::callIntrinsic(b_, llvm::Intrinsic::sqrt, {a->getType()}, {a}));
    case UnOp::Floor:
      return math::floor(b_, a);
    case UnOp::Ceil:
      return math::callIntrinsic(b_, llvm::Intrinsic::ceil, {a->getType()}, {a});
    default:
      bug(fmt::format("thir::hasFloat64 has {}, codegen does not", unOpName(op)));
    }
  }
  return viaF32(a, t, [&](Value *x) -> Value * {
    switch (op) {
    case UnOp::Sqrt:
      return math::callIntrinsic(b_, llvm::Intrinsic::sqrt, {x->getType()}, {x});
    case UnOp::Floor:
      return math::floor(b_, x);
    case UnOp::Ceil:
      return math::callIntrinsic(b_, llvm::Intrinsic::ceil, {x->getType()}, {x});
    default:
      break;
    }
    return perLane(x, [&](Value *s) -> Value * {
      switch (op) {
      case UnOp::Exp:
      case UnOp::Exp2:
        return exponential(op, s);
      case UnOp::Log:
        return math::log(b_, s);
      case UnOp::Log2:
        return math::log2(b_, s);
      case UnOp::Rsqrt:
        return math::rsqrt(b_, s);
      case UnOp::Tanh:
        return math::tanh(b_, s, opts_.fastMath);
      case UnOp::Erf:
        return math::erf(b_, s);
      case UnOp::Sigmoid:
        return math::sigmoid(b_, s, opts_.fastMath);
      default:
        bug("unexpected unary op");
      }
    });
  });
}

// a ** e on integers by square-and-multiply over every bit of e, as straight-line selects
// (expressions may not branch). Negative exponents give 0, except for bases 1 and -1.
Value *KernelEmitter::intPow(Value *a, Value *e, thir::Type t) {
  llvm::Type *ty = a->getType();
  auto k = [&](int64_t v) { return llvm::ConstantInt::get(ty, static_cast<uint64_t>(v), true); };
  Value *result = k(1);
  Value *base = a;
  Value *rest = e;
  for (int bit = 0; bit < dtypeBits(t.elem); ++bit) {
    Value *odd = b_.CreateICmpNE(b_.CreateAnd(rest, k(1)), k(0));
    result = b_.CreateSelect(odd, b_.CreateMul(result, base), result);
    base = b_.CreateMul(base, base);
    rest = b_.CreateLShr(rest, k(1));
  }
  if (!isSigned(t.elem))
    return result;
  Value *negExp = b_.CreateICmpSLT(e, k(0));
  Value *oddExp = b_.CreateICmpNE(b_.CreateAnd(e, k(1)), k(0));
  Value *minusOne = b_.CreateSelect(oddExp, k(-1), k(1)); // (-1) ** e for negative e
  Value *forNeg = b_.CreateSelect(b_.CreateICmpEQ(a, k(1)), k(1),
                                  b_.CreateSelect(b_.CreateICmpEQ(a, k(-1)), minusOne, k(0)));
  return b_.CreateSelect(negExp, forNeg, result);
}

Value *KernelEmitter::exponential(thir::UnOp op, Value *x) {
  bool flush = opts_.fastMath;
  Value *r = op == thir::UnOp::Exp ? math::exp(b_, x, flush) : math::exp2(b_, x, flush);
  if (!flush)
    exponentials_[r] = {op, llvm::WeakTrackingVH(x)};
  return r;
}

// e + c (or e - c, c - e) for an exp or exp2 result e and a constant |c| >= 2^-102: a
// subnormal e is below half an ulp of c, so the sum is the same whether e is that subnormal or
// 0, and e may be computed flushing subnormal results (one MUFU.EX2 instead of
// math::exp2's square of the half; sigmoid's 1 + exp(-x)). A recomputation: the first e stays
// for any other use it has, and is dead code otherwise.
Value *KernelEmitter::absorbedExponential(Value *e, Value *other) {
  auto it = exponentials_.find(e);
  auto *c = llvm::dyn_cast<llvm::ConstantFP>(other);
  if (it == exponentials_.end() || !c || !c->getValueAPF().isFiniteNonZero() ||
      llvm::ilogb(c->getValueAPF()) < -102)
    return e;
  auto [op, arg] = it->second;
  if (!arg)
    return e;
  return op == thir::UnOp::Exp ? math::exp(b_, arg, true) : math::exp2(b_, arg, true);
}

Value *KernelEmitter::binary(thir::BinOp op, Value *a, Value *b, thir::Type t) {
  using thir::BinOp;
  DType et = t.elem;
  if (isFloat8(et)) {
    // In float32 (float8 values are exact there), rounded back once; comparisons give bool.
    thir::Type f32{DType::Float32, t.lanes};
    Value *r = binary(op, cast(a, t, f32), cast(b, t, f32), f32);
    return r->getType()->isIntOrIntVectorTy(1) ? r : cast(r, f32, t);
  }
  bool fp = isFloat(et);
  bool sgn = isSigned(et);
  // The program's own +, - and * may contract (a * b + c -> fma) as nvcc's code does by
  // default; the math library's sequences are built without the flag and keep their roundings.
  auto contractible = [&](Value *v) {
    if (auto *i = llvm::dyn_cast<llvm::Instruction>(v); i && opts_.fuseMultiplyAdd)
      i->setHasAllowContract(true);
    return v;
  };
  if (fp && (op == BinOp::Add || op == BinOp::Sub)) {
    Value *a2 = absorbedExponential(a, b);
    b = absorbedExponential(b, a);
    a = a2;
  }
  switch (op) {
  case BinOp::Add:
    return fp ? contractible(b_.CreateFAdd(a, b)) : b_.CreateAdd(a, b);
  case BinOp::Sub:
    return fp ? contractible(b_.CreateFSub(a, b)) : b_.CreateSub(a, b);
  case BinOp::Mul:
    return fp ? contractible(b_.CreateFMul(a, b)) : b_.CreateMul(a, b);
  case BinOp::Div:
    if (fp && et == DType::Float32 && !opts_.preciseDiv) {
      // div.full.f32: at most 2 ulp off, full range, no slow path (TileLang's fast-math default).
      if (t.lanes == 1)
        return math::divide(b_, a, b);
      Value *out = llvm::PoisonValue::get(a->getType());
      for (int i = 0; i < t.lanes; ++i)
        out = b_.CreateInsertElement(
            out, math::divide(b_, b_.CreateExtractElement(a, i), b_.CreateExtractElement(b, i)), i);
      return out;
    }
    return fp ? b_.CreateFDiv(a, b) : sgn ? b_.CreateSDiv(a, b) : b_.CreateUDiv(a, b);
  case BinOp::FloorDiv:
  case BinOp::Mod: {
    if (fp) {
      if (et == DType::Float64 || et == DType::Float32) {
        Value *q = math::floor(b_, b_.CreateFDiv(a, b));
        return op == BinOp::FloorDiv ? q : b_.CreateFSub(a, b_.CreateFMul(q, b));
      }
      llvm::Type *wide = vec(b_.getFloatTy(), t.lanes);
      Value *r =
          binary(op, b_.CreateFPExt(a, wide), b_.CreateFPExt(b, wide), {DType::Float32, t.lanes});
      return b_.CreateFPTrunc(r, a->getType());
    }
    if (!sgn)
      return op == BinOp::FloorDiv ? b_.CreateUDiv(a, b) : b_.CreateURem(a, b);
    // Python rounds the quotient toward -inf: when the remainder is nonzero and its sign differs
    // from the divisor's, C's truncated result is one off.
    Value *q = b_.CreateSDiv(a, b);
    Value *r = b_.CreateSRem(a, b);
    Value *zero = llvm::Constant::getNullValue(a->getType());
    Value *fix = b_.CreateAnd(b_.CreateICmpNE(r, zero), b_.CreateICmpSLT(b_.CreateXor(r, b), zero));
    if (op == BinOp::FloorDiv)
      return b_.CreateSub(q, b_.CreateZExt(fix, a->getType()));
    return b_.CreateSelect(fix, b_.CreateAdd(r, b), r);
  }
  case BinOp::Pow:
    if (!fp)
      return intPow(a, b, t);
    if (et == DType::Float64)
      unsupported("pow on float64");
    return viaF32(a, t, [&](Value *x) {
      Value *y = isHalfLike(et) ? b_.CreateFPExt(b, x->getType()) : b;
      if (t.lanes == 1)
        return math::pow(b_, x, y);
      Value *out = llvm::PoisonValue::get(x->getType());
      for (unsigned i = 0; i < static_cast<unsigned>(t.lanes); ++i)
        out = b_.CreateInsertElement(
            out, math::pow(b_, b_.CreateExtractElement(x, i), b_.CreateExtractElement(y, i)), i);
      return out;
    });
  case BinOp::Min:
  case BinOp::Max: {
    // minnum/maxnum return the other operand for one NaN, like CUDA's fminf/fmaxf.
    llvm::Intrinsic::ID id = op == BinOp::Min ? (fp    ? llvm::Intrinsic::minnum
                                                 : sgn ? llvm::Intrinsic::smin
                                                       : llvm::Intrinsic::umin)
                                              : (fp    ? llvm::Intrinsic::maxnum
                                                 : sgn ? llvm::Intrinsic::smax
                                                       : llvm::Intrinsic::umax);
    return math::callIntrinsic(b_, id, {a->getType()}, {a, b});
  }
  case BinOp::Eq:
  case BinOp::Ne:
  case BinOp::Lt:
  case BinOp::Le:
  case BinOp::Gt:
  case BinOp::Ge: {
    using P = llvm::CmpInst::Predicate;
    static constexpr P fpPreds[] = {P::FCMP_OEQ, P::FCMP_UNE, P::FCMP_OLT,
                                    P::FCMP_OLE, P::FCMP_OGT, P::FCMP_OGE};
    static constexpr P sPreds[] = {P::ICMP_EQ,  P::ICMP_NE,  P::ICMP_SLT,
                                   P::ICMP_SLE, P::ICMP_SGT, P::ICMP_SGE};
    static constexpr P uPreds[] = {P::ICMP_EQ,  P::ICMP_NE,  P::ICMP_ULT,
                                   P::ICMP_ULE, P::ICMP_UGT, P::ICMP_UGE};
    size_t i = static_cast<size_t>(op) - static_cast<size_t>(BinOp::Eq);
    if (fp)
      return b_.CreateFCmp(fpPreds[i], a, b);
    return b_.CreateICmp(sgn ? sPreds[i] : uPreds[i], a, b);
  }
  case BinOp::And:
    return b_.CreateAnd(a, b);
  case BinOp::Or:
    return b_.CreateOr(a, b);
  case BinOp::BitAnd:
    return b_.CreateAnd(a, b);
  case BinOp::BitXor:
    return b_.CreateXor(a, b);
  case BinOp::BitOr:
    return b_.CreateOr(a, b);
  case BinOp::Shl:
    return b_.CreateShl(a, b);
  case BinOp::Shr:
    return sgn ? b_.CreateAShr(a, b) : b_.CreateLShr(a, b);
  }
  bug("unknown binary op");
}

Value *KernelEmitter::cast(Value *v, thir::Type from, thir::Type to) {
  if (from.lanes != to.lanes)
    bug("cast changes the lane count");
  DType f = from.elem;
  DType t = to.elem;
  if (f == t)
    return v;
  if (isFloat8(f) || isFloat8(t)) {
    // Lowering reports this at the source construct; thread IR text can still get here.
    if (!opts_.target.hasFp8Convert)
      unsupported(fmt::format("cast from {} to {} on {} (float8 conversions need sm_89 or newer)",
                              dtypeName(f), dtypeName(t), opts_.target.arch));
    // float8 -> float16 is exact (both float8 formats fit float16), so every conversion from
    // float8 goes through it; to float8, float16 and float32 convert directly (one rounding)
    // and every other type through float32 (exact for bfloat16).
    if (isFloat8(f))
      return cast(float8ToHalf(v, f, to.lanes), {DType::Float16, to.lanes}, to);
    if (f == DType::Float16 || f == DType::Float32)
      return toFloat8(v, f, t, to.lanes);
    thir::Type f32{DType::Float32, to.lanes};
    return cast(cast(v, from, f32), f32, to);
  }
  llvm::Type *dst = valueType(to);
  if (t == DType::Bool) {
    Value *zero = llvm::Constant::getNullValue(v->getType());
    return isFloat(f) ? b_.CreateFCmpUNE(v, zero) : b_.CreateICmpNE(v, zero);
  }
  if (f == DType::Bool)
    return isFloat(t) ? b_.CreateUIToFP(v, dst) : b_.CreateZExt(v, dst);
  if (!isFloat(f) && !isFloat(t))
    return b_.CreateIntCast(v, dst, isSigned(f));
  if (!isFloat(f))
    return isSigned(f) ? b_.CreateSIToFP(v, dst) : b_.CreateUIToFP(v, dst);
  if (!isFloat(t)) {
    // Saturating (NaN -> 0), like PTX's cvt.rzi.sat; a plain fptosi would be poison when out of
    // range.
    return math::callIntrinsic(
        b_, isSigned(t) ? llvm::Intrinsic::fptosi_sat : llvm::Intrinsic::fptoui_sat,
        {dst, v->getType()}, {v});
  }
  // float <-> float. half <-> bfloat goes through float32, which holds both exactly.
  if (isHalfLike(f) && isHalfLike(t))
    return b_.CreateFPTrunc(b_.CreateFPExt(v, vec(b_.getFloatTy(), to.lanes)), dst);
  if (dtypeBits(t) > dtypeBits(f))
    return b_.CreateFPExt(v, dst);
  return b_.CreateFPTrunc(v, dst);
}

Value *KernelEmitter::float8ToHalf(Value *v, DType f, int lanes) {
  // cvt.rn.f16x2.e4m3x2 (e5m2x2): byte 0 of the 16-bit operand becomes lane 0 (the low half).
  auto id = f == DType::Float8E4M3 ? llvm::Intrinsic::nvvm_e4m3x2_to_f16x2_rn
                                   : llvm::Intrinsic::nvvm_e5m2x2_to_f16x2_rn;
  std::vector<Value *> out;
  for (int i = 0; i < lanes; i += 2) {
    Value *pair = gather({laneOf(v, i), i + 1 < lanes ? laneOf(v, i + 1) : b_.getInt8(0)});
    Value *h2 = math::callIntrinsic(b_, id, {}, {b_.CreateBitCast(pair, b_.getInt16Ty())});
    out.push_back(b_.CreateExtractElement(h2, uint64_t{0}));
    if (i + 1 < lanes)
      out.push_back(b_.CreateExtractElement(h2, uint64_t{1}));
  }
  return gather(out);
}

Value *KernelEmitter::toFloat8(Value *v, DType from, DType t, int lanes) {
  bool e4m3 = t == DType::Float8E4M3;
  std::vector<Value *> out;
  for (int i = 0; i < lanes; i += 2) {
    Value *lo = laneOf(v, i);
    Value *hi = i + 1 < lanes ? laneOf(v, i + 1) : llvm::ConstantFP::get(lo->getType(), 0.0);
    Value *packed;
    if (from == DType::Float16) {
      // cvt.rn.satfinite.e4m3x2.f16x2: lane 0 (the low half) becomes byte 0.
      packed = math::callIntrinsic(b_,
                                   e4m3 ? llvm::Intrinsic::nvvm_f16x2_to_e4m3x2_rn
                                        : llvm::Intrinsic::nvvm_f16x2_to_e5m2x2_rn,
                                   {}, {gather({lo, hi})});
    } else {
      // cvt.rn.satfinite.e4m3x2.f32 d, a, b puts a in the upper byte: (hi, lo).
      packed = math::callIntrinsic(
          b_, e4m3 ? llvm::Intrinsic::nvvm_ff_to_e4m3x2_rn : llvm::Intrinsic::nvvm_ff_to_e5m2x2_rn,
          {}, {hi, lo});
    }
    Value *bytes = b_.CreateBitCast(packed, vec(b_.getInt8Ty(), 2));
    out.push_back(b_.CreateExtractElement(bytes, uint64_t{0}));
    if (i + 1 < lanes)
      out.push_back(b_.CreateExtractElement(bytes, uint64_t{1}));
  }
  return gather(out);
}

} // namespace tilec::codegen::detail
