#include "BackendTestUtil.h"

#include "driver/Toolchain.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <stdexcept>

using namespace tilec;
using namespace tilec::test;

namespace {

bool contains(const std::string &haystack, std::string_view needle) {
  return haystack.find(needle) != std::string::npos;
}

// LLVM 22 spells untyped moves with bit-size types (ld.global.v4.b32); older LLVMs used .f32.
bool hasV4Access(const std::string &ptx, std::string_view op) {
  return contains(ptx, fmt::format("{}.global.v4.b32", op)) ||
         contains(ptx, fmt::format("{}.global.v4.f32", op));
}

/// One kernel `k(out: <outType> tensor, in: <inType> tensor)` whose body stores each of
/// `values(x)` (x = in[tid]) at out[tid * count + i].
template <class F> Module elementwise(DType in, DType out, F &&values) {
  Kernel k;
  k.name = "k";
  k.threads = 128;
  k.params = {tensor("out", out, 4), tensor("in", in, 4)};
  Type i64{DType::Int64, 1};
  Expr tid = cast(special(Special::ThreadIdxX), i64);
  Expr x = globalLoad(1, tid, {in, 1}, dtypeBytes(in));
  std::vector<Expr> vs = values(x);
  for (size_t i = 0; i < vs.size(); ++i) {
    Expr idx =
        binary(BinOp::Add, binary(BinOp::Mul, tid, constInt(static_cast<int64_t>(vs.size()))),
               constInt(static_cast<int64_t>(i)));
    k.body.push_back(store(0, idx, vs[i], dtypeBytes(out)));
  }
  Module m;
  m.name = "ops";
  m.kernels.push_back(std::move(k));
  return m;
}

/// A kernel storing the single value `v` to out[0]; O3 folds constant expressions, so the
/// stored constant shows the semantics.
Module storeOne(Expr v) {
  Kernel k;
  k.name = "k";
  k.threads = 32;
  DType t = v->type.elem;
  k.params = {tensor("out", t, 1)};
  k.body.push_back(store(0, constInt(0), v, 1));
  Module m;
  m.name = "fold";
  m.kernels.push_back(std::move(k));
  return m;
}

const UnOp kFloatUnOps[] = {UnOp::Neg,     UnOp::Abs,   UnOp::Exp,   UnOp::Exp2, UnOp::Log,
                            UnOp::Log2,    UnOp::Sqrt,  UnOp::Rsqrt, UnOp::Tanh, UnOp::Erf,
                            UnOp::Sigmoid, UnOp::Floor, UnOp::Ceil};
const BinOp kArith[] = {BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div, BinOp::FloorDiv,
                        BinOp::Mod, BinOp::Pow, BinOp::Min, BinOp::Max};
const BinOp kCompare[] = {BinOp::Eq, BinOp::Ne, BinOp::Lt, BinOp::Le, BinOp::Gt, BinOp::Ge};
const DType kComputeTypes[] = {DType::Bool,     DType::Int8,    DType::UInt8,  DType::Int16,
                               DType::Int32,    DType::UInt32,  DType::Int64,  DType::Float16,
                               DType::BFloat16, DType::Float32, DType::Float64};

void requirePtxasAccepts(const std::string &ptx, std::string_view arch) {
  auto ptxas = driver::findPtxas();
  if (!ptxas)
    return;
  driver::ToolResult r = driver::runPtxas(*ptxas, ptx, arch);
  INFO(r.log);
  CHECK(r.ok);
  CHECK(r.output.size() > 4);
  CHECK(r.output.substr(0, 4) == "\x7f"
                                 "ELF");
}

} // namespace

TEST_CASE("thread IR prints one statement a line") {
  std::string text = print(vectorAdd());
  INFO(text);
  CHECK(contains(text, "module vector_add\n"));
  CHECK(contains(text, "kernel vector_add(%A: tensor<float32, align 16>, %B: tensor<float32, "
                       "align 16>, %C: tensor<float32, align 16>, %N: dim align 1) threads=256 "
                       "grid=(((%N + 1023) // 1024), none, none) dynamic_smem=0 {\n"));
  CHECK(contains(text, "  var v0: int64 = ((cast<int64>(blockIdx.x) * 1024) + "
                       "(cast<int64>(threadIdx.x) * 4))\n"));
  CHECK(contains(text, "  if ((v0 + 4) <= %N) {\n    store %C[v0] = (load<float32x4>(%A[v0], "
                       "align 16) + load<float32x4>(%B[v0], align 16)), align 16\n  } else {\n"));
  CHECK(contains(text, "    for v1: int64 in range(0, 4, 1) unroll {\n      var v2: int64 = (v0 "
                       "+ v1)\n      if (v2 < %N) {\n"));
}

TEST_CASE("thread IR builders reject misuse") {
  CHECK_THROWS_AS(binary(BinOp::Add, constInt(1), constFloat(1.0)), std::logic_error);
  CHECK_THROWS_AS(unary(UnOp::Exp, constInt(1)), std::logic_error);
  CHECK_THROWS_AS(binary(BinOp::And, constInt(1), constInt(1)), std::logic_error);
  CHECK_THROWS_AS(globalLoad(0, constInt(0, DType::Int32), {DType::Float32, 1}, 4),
                  std::logic_error);
  CHECK_THROWS_AS(globalLoad(0, constInt(0), {DType::Float32, 1}, 3), std::logic_error);
  CHECK_THROWS_AS(select(constInt(1), constInt(1), constInt(2)), std::logic_error);
  Expr one = constInt(1);
  CHECK(cast(one, {DType::Int64, 1}) == one);
  CHECK(binary(BinOp::Lt, one, one)->type == Type{DType::Bool, 1});
  CHECK(broadcast(one, 4)->type == Type{DType::Int64, 4});
}

TEST_CASE("vector_add: verified LLVM IR with the kernel's attributes") {
  llvm::LLVMContext ctx;
  auto mod = codegen::buildModule(vectorAdd(), {}, ctx);
  REQUIRE_MESSAGE(mod, (mod ? "" : mod.error()));
  std::string problems;
  llvm::raw_string_ostream os(problems);
  CHECK_MESSAGE(!llvm::verifyModule(**mod, &os), problems);
  std::string ll = codegen::emitLLVMText(**mod);
  INFO(ll);
  CHECK(contains(ll, "target triple = \"nvptx64-nvidia-cuda\""));
  CHECK(contains(ll,
                 "define ptx_kernel void @vector_add(ptr addrspace(1) noundef readonly align 16 "));
  CHECK(contains(ll, "i64 noundef %N"));
  CHECK(contains(ll, "\"nvvm.reqntid\"=\"256,1,1\""));
  CHECK(contains(ll, "load <4 x float>"));
  CHECK_FALSE(contains(ll, "alloca")); // mem2reg promoted every variable
}

TEST_CASE("vector_add: PTX has vector accesses and the block size") {
  for (const char *arch : {"sm_90a", "sm_80", "sm_86", "sm_89", "sm_90"}) {
    CAPTURE(arch);
    Compiled c = compile(vectorAdd(), forArch(arch));
    REQUIRE_MESSAGE(c.error.empty(), c.error);
    INFO(c.ptx);
    CHECK(contains(c.ptx, ".target " + std::string(arch)));
    CHECK(contains(c.ptx, ".entry vector_add("));
    CHECK(hasV4Access(c.ptx, "ld"));
    CHECK(hasV4Access(c.ptx, "st"));
    CHECK(contains(c.ptx, ".reqntid 256"));
    requirePtxasAccepts(c.ptx, arch);
  }
}

TEST_CASE("codegen is deterministic") {
  Compiled a = compile(vectorAdd());
  Compiled b = compile(vectorAdd());
  REQUIRE(a.error.empty());
  CHECK(a.ll == b.ll);
  CHECK(a.ptx == b.ptx);
}

TEST_CASE("every unary op codegens for every float type") {
  for (DType t : {DType::Float16, DType::BFloat16, DType::Float32}) {
    for (bool fast : {false, true}) {
      CAPTURE(dtypeName(t));
      Module m = elementwise(t, t, [](Expr x) {
        std::vector<Expr> vs;
        for (UnOp op : kFloatUnOps)
          vs.push_back(unary(op, x));
        // Vector forms go lane by lane.
        vs.push_back(unary(UnOp::Tanh, broadcast(x, 2)));
        return vs;
      });
      for (const char *arch : {"sm_80", "sm_90a"}) {
        codegen::TargetOptions opts = forArch(arch);
        opts.fastMath = fast;
        Compiled c = compile(m, opts);
        REQUIRE_MESSAGE(c.error.empty(), c.error);
        requirePtxasAccepts(c.ptx, arch);
      }
      if (t == DType::Float32) {
        codegen::TargetOptions opts;
        opts.fastMath = fast;
        Compiled c = compile(m, opts);
        CHECK(contains(c.ptx, "ex2.approx"));
        CHECK(contains(c.ptx, "lg2.approx"));
        CHECK(contains(c.ptx, "rsqrt.approx"));
        CHECK(contains(c.ptx, "sqrt.rn.f32"));
        CHECK(contains(c.ptx, "cvt.rmi.f32.f32"));
        CHECK(fast == contains(c.ptx, "tanh.approx.f32"));
      }
    }
  }
}

TEST_CASE("vector math stores whole vectors") {
  Kernel k;
  k.name = "k";
  k.threads = 64;
  k.params = {tensor("out", DType::Float32), tensor("in", DType::Float32)};
  Type i64{DType::Int64, 1}, f32x4{DType::Float32, 4};
  Expr idx = binary(BinOp::Mul, cast(special(Special::ThreadIdxX), i64), constInt(4));
  Expr x = globalLoad(1, idx, f32x4, 16);
  k.body.push_back(store(0, idx, binary(BinOp::Mul, unary(UnOp::Sigmoid, x), x), 16));
  Module m{"silu", {k}};
  Compiled c = compile(m);
  REQUIRE_MESSAGE(c.error.empty(), c.error);
  CHECK(hasV4Access(c.ptx, "ld"));
  CHECK(hasV4Access(c.ptx, "st"));
}

TEST_CASE("float64 supports arithmetic and reports the transcendental ops") {
  Module ok = elementwise(DType::Float64, DType::Float64, [](Expr x) {
    return std::vector<Expr>{unary(UnOp::Sqrt, x),     unary(UnOp::Rsqrt, x),   unary(UnOp::Abs, x),
                             unary(UnOp::Floor, x),    unary(UnOp::Ceil, x),    unary(UnOp::Neg, x),
                             binary(BinOp::Mod, x, x), binary(BinOp::Max, x, x)};
  });
  Compiled c = compile(ok);
  CHECK_MESSAGE(c.error.empty(), c.error);
  for (UnOp op : {UnOp::Exp, UnOp::Log, UnOp::Tanh, UnOp::Erf, UnOp::Sigmoid}) {
    Module bad = elementwise(DType::Float64, DType::Float64,
                             [&](Expr x) { return std::vector<Expr>{unary(op, x)}; });
    Compiled e = compile(bad);
    CHECK(contains(e.error, "not supported yet: "));
    CHECK(contains(e.error, "on float64"));
  }
}

TEST_CASE("every binary op codegens for every type") {
  for (DType t : kComputeTypes) {
    CAPTURE(dtypeName(t));
    Module m = elementwise(t, DType::Bool, [&](Expr x) {
      std::vector<Expr> vs;
      for (BinOp op : kCompare)
        vs.push_back(binary(op, x, x));
      if (t == DType::Bool) {
        vs.push_back(binary(BinOp::And, x, x));
        vs.push_back(binary(BinOp::Or, x, x));
        vs.push_back(unary(UnOp::Not, x));
        vs.push_back(select(x, x, unary(UnOp::Not, x)));
      } else {
        Expr y = binary(BinOp::Add, x, x);
        for (BinOp op : kArith) {
          if (t == DType::Float64 && op == BinOp::Pow)
            continue;
          vs.push_back(binary(BinOp::Eq, binary(op, x, y), x));
        }
        vs.push_back(binary(BinOp::Eq, unary(UnOp::Abs, x), unary(UnOp::Neg, x)));
      }
      return vs;
    });
    for (const char *arch : {"sm_80", "sm_90a"}) {
      Compiled c = compile(m, forArch(arch));
      REQUIRE_MESSAGE(c.error.empty(), c.error);
      requirePtxasAccepts(c.ptx, arch);
    }
  }
}

TEST_CASE("casts between every pair of non-float8 types codegen") {
  for (DType from : kComputeTypes) {
    for (DType to : kComputeTypes) {
      CAPTURE(dtypeName(from));
      CAPTURE(dtypeName(to));
      Module m = elementwise(from, to, [&](Expr x) {
        return std::vector<Expr>{cast(x, {to, 1}), cast(broadcast(x, 2), {to, 2})};
      });
      Compiled c = compile(m, forArch("sm_80"));
      REQUIRE_MESSAGE(c.error.empty(), c.error);
      requirePtxasAccepts(c.ptx, "sm_80");
    }
  }
}

TEST_CASE("float8 converts to and from every type on sm_89+ and is reported on sm_80") {
  for (DType f8 : {DType::Float8E4M3, DType::Float8E5M2}) {
    for (DType other : kComputeTypes) {
      CAPTURE(dtypeName(f8));
      CAPTURE(dtypeName(other));
      // Both directions, scalar and odd and even lane counts (cvt converts pairs).
      Module in = elementwise(f8, other, [&](Expr x) {
        return std::vector<Expr>{cast(x, {other, 1}), cast(broadcast(x, 3), {other, 3}),
                                 cast(broadcast(x, 4), {other, 4})};
      });
      Module out = elementwise(other, f8, [&](Expr x) {
        return std::vector<Expr>{cast(x, {f8, 1}), cast(broadcast(x, 3), {f8, 3}),
                                 cast(broadcast(x, 4), {f8, 4})};
      });
      for (const Module *m : {&in, &out}) {
        Compiled c = compile(*m, forArch("sm_90a"));
        REQUIRE_MESSAGE(c.error.empty(), c.error);
        requirePtxasAccepts(c.ptx, "sm_90a");
        CHECK(contains(compile(*m, forArch("sm_80")).error, "(float8 conversions need sm_89"));
      }
    }
  }
  // Arithmetic on float8 (in float32) and float8 constants (encoded at compile time).
  Module arith = elementwise(DType::Float8E4M3, DType::Float8E4M3, [](Expr x) {
    return std::vector<Expr>{
        binary(BinOp::Add, x, constFloat(1.5, DType::Float8E4M3)),
        unary(UnOp::Exp, x),
    };
  });
  Compiled c = compile(arith, forArch("sm_89"));
  REQUIRE_MESSAGE(c.error.empty(), c.error);
  CHECK(contains(c.ptx, "cvt.rn.satfinite.e4m3x2.f32"));
  CHECK(contains(compile(arith, forArch("sm_80")).error, "(float8 conversions need sm_89"));
  // Moving float8 bytes around without computing is fine everywhere.
  Module copy = elementwise(DType::Float8E5M2, DType::Float8E5M2,
                            [](Expr x) { return std::vector<Expr>{x}; });
  CHECK(compile(copy, forArch("sm_80")).error.empty());
}

TEST_CASE("integer // and % are floored, pow is exact") {
  struct Case {
    int64_t a, b, div, mod;
  };
  for (DType t : {DType::Int32, DType::Int64, DType::Int8}) {
    for (Case c : {Case{7, 2, 3, 1}, Case{-7, 2, -4, 1}, Case{7, -2, -4, -1}, Case{-7, -2, 3, -1},
                   Case{6, 3, 2, 0}, Case{-6, 3, -2, 0}}) {
      CAPTURE(dtypeName(t));
      CAPTURE(c.a);
      CAPTURE(c.b);
      std::string ty = fmt::format("i{}", dtypeBits(t));
      Compiled d = compile(storeOne(binary(BinOp::FloorDiv, constInt(c.a, t), constInt(c.b, t))));
      CHECK(contains(d.ll, fmt::format("store {} {}, ", ty, c.div)));
      Compiled r = compile(storeOne(binary(BinOp::Mod, constInt(c.a, t), constInt(c.b, t))));
      CHECK(contains(r.ll, fmt::format("store {} {}, ", ty, c.mod)));
    }
  }
  for (auto [a, e, r] : {std::tuple{3, 4, 81},
                         {-2, 3, -8},
                         {2, -1, 0},
                         {-1, -3, -1},
                         {1, -5, 1},
                         {5, 0, 1},
                         {0, 0, 1}}) {
    CAPTURE(a);
    CAPTURE(e);
    Compiled c =
        compile(storeOne(binary(BinOp::Pow, constInt(a, DType::Int32), constInt(e, DType::Int32))));
    CHECK(contains(c.ll, fmt::format("store i32 {}, ", r)));
  }
  Compiled f = compile(storeOne(binary(BinOp::Mod, constFloat(-7.0), constFloat(2.0))));
  CHECK(contains(f.ll, "store float 1.000000e+00, "));
  Compiled s = compile(storeOne(cast(constFloat(300.0), {DType::Int8, 1})));
  CHECK(contains(s.ll, "store i8 127, "));
}

TEST_CASE("scalar parameters, loops, barriers and the 2-D grid registers") {
  Kernel k;
  k.name = "scale_rows";
  k.threads = 128;
  k.params = {tensor("X", DType::Float16, 2), scalar("alpha", DType::Float16),
              scalar("flag", DType::Bool), scalar("n", DType::Int32), dim("M")};
  Type i32{DType::Int32, 1}, i64{DType::Int64, 1};
  Expr row = cast(special(Special::BlockIdxY), i64);
  Expr col = cast(special(Special::ThreadIdxX), i32);
  k.body.push_back(Stmt{Barrier{}});
  Body inner = {
      store(0, binary(BinOp::Add, row, cast(var(0, i32), i64)),
            select(param(2, DType::Bool),
                   binary(BinOp::Mul, globalLoad(0, cast(var(0, i32), i64), {DType::Float16, 1}, 2),
                          param(1, DType::Float16)),
                   constFloat(0.0, DType::Float16)),
            2)};
  k.body.push_back(Stmt{
      ForStmt{0, i32, col, param(3, DType::Int32), constInt(128, DType::Int32), inner, false}});
  k.grid = {constInt(1), param(4, DType::Int64), nullptr};
  Compiled c = compile(Module{"scale", {k}});
  REQUIRE_MESSAGE(c.error.empty(), c.error);
  INFO(c.ptx);
  CHECK(contains(c.ptx, "bar.sync"));
  CHECK(contains(c.ptx, "%ctaid.y"));
  requirePtxasAccepts(c.ptx, "sm_90a");
}

TEST_CASE("ptxas failures come back as text") {
  auto ptxas = driver::findPtxas();
  if (!ptxas)
    return;
  driver::ToolResult r = driver::runPtxas(*ptxas, "this is not ptx", "sm_90a");
  CHECK_FALSE(r.ok);
  CHECK_FALSE(r.log.empty());
}

TEST_CASE("loop strength reduction is a per-compilation option") {
  // for (i = 0; i < n; ++i) out[i * 256 + tid] = in[i * 512 + tid] * 2: LSR turns the two
  // addresses into pointer induction variables.
  Kernel k;
  k.name = "k";
  k.threads = 256;
  k.params = {tensor("out", DType::Float32, 4), tensor("in", DType::Float32, 4), dim("n")};
  Type i64{DType::Int64, 1};
  Expr tid = cast(special(Special::ThreadIdxX), i64);
  Expr i = var(0, i64);
  auto at = [&](int64_t stride) {
    return binary(BinOp::Add, binary(BinOp::Mul, i, constInt(stride)), tid);
  };
  Body body = {store(
      0, at(256),
      binary(BinOp::Mul, globalLoad(1, at(512), {DType::Float32, 1}, 4), constFloat(2.0)), 4)};
  k.body = {Stmt{ForStmt{0, i64, constInt(0), param(2, DType::Int64), constInt(1), body, false}}};
  Module m;
  m.name = "lsr";
  m.kernels.push_back(std::move(k));
  codegen::TargetOptions off, on;
  on.loopStrengthReduction = true;
  Compiled a = compile(m, off), b = compile(m, on), c = compile(m, off);
  REQUIRE_MESSAGE(a.error.empty(), a.error);
  REQUIRE_MESSAGE(b.error.empty(), b.error);
  CHECK(a.ptx != b.ptx);
  // Nothing of the first compilation's setting outlives it.
  CHECK(a.ptx == c.ptx);
}
