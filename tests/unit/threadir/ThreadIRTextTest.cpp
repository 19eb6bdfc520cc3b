// The thread IR text form: print -> parse -> print is the identity on builder-made modules
// that use every node and statement, sharing within a statement survives, and malformed text
// and malformed modules are reported, never crashed on.
#include "threadir/ThreadIRParser.h"
#include "threadir/ThreadIRVerifier.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <random>

using namespace tilec;
using namespace tilec::thir;

namespace {

const Type kI32{DType::Int32, 1};
const Type kI64{DType::Int64, 1};
const Type kF32{DType::Float32, 1};

struct Parsed {
  std::optional<Module> module;
  std::string diagnostics;
};

Parsed parse(std::string text) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  uint32_t file = sm.addBuffer("t.thir", std::move(text));
  Parsed p{parseThreadIR(sm, file, diags), ""};
  p.diagnostics = diags.renderAll();
  return p;
}

std::string verifyErrors(const Module &m) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  verify(m, diags);
  return diags.renderAll();
}

Stmt stmt(auto op) { return Stmt{std::move(op)}; }

/// One kernel using every node and statement kind, with the field values that print must
/// not lose (flags, alignments, lanes, odd floats, escapes, null grid entries).
Module everything() {
  Kernel k;
  k.name = "all";
  k.threads = 256;
  k.dynamicSharedBytes = 65536;
  k.minBlocksPerSM = 2;
  k.persistentBlocksPerSM = 1;
  k.persistentBalanceX = true;
  k.params = {{"A", ParamKind::Tensor, DType::Float16, 8, {}},
              {"out", ParamKind::Tensor, DType::Float32, 16, {}},
              {"alpha", ParamKind::Scalar, DType::Float32, 0, {}},
              {"flag", ParamKind::Scalar, DType::Bool, 4, {}},
              {"N", ParamKind::Dim, DType::Int64, 1, {}}};
  Expr n = param(4, DType::Int64);
  TensorMapInfo map{0, {constInt(64), n}, {binary(BinOp::Mul, n, constInt(2))}, {64, 32}, 128};
  k.params.push_back({"A_map", ParamKind::TensorMap, DType::Float16, 0, map});
  k.params.push_back({"tma", ParamKind::TmaEnabled, DType::Int32, 0, {}});
  k.grid[0] = binary(BinOp::FloorDiv, binary(BinOp::Add, n, constInt(127)), constInt(128));
  k.grid[2] = select(binary(BinOp::Gt, n, constInt(4)), constInt(2), constInt(1));

  Expr tid = special(Special::ThreadIdxX);
  Expr idx = cast(tid, kI64);
  Expr half = globalLoad(0, idx, {DType::Float16, 4}, 8);
  Expr x = cast(extractLane(half, 1), kF32);
  Expr frag = ldMatrix(binary(BinOp::Mul, tid, constInt(16, DType::Int32)), 4, true);
  Expr b2 = ldMatrix(constInt(512, DType::Int32), 2, false);
  Expr acc = broadcast(constFloat(0.0), 4);
  Expr mma = mmaSync(frag, b2, acc, DType::BFloat16);
  Expr desc = binary(BinOp::Add, cast(sharedAddress(constInt(0, DType::Int32)), kI64),
                     constInt(int64_t{1} << 62));
  Expr wg = wgmma(var(3, {DType::Float32, 64}), {{desc, desc, 0}, {desc, desc, 32}}, 64,
                  DType::Float16, false, true, true);
  Expr wgRs = wgmma(var(3, {DType::Float32, 64}), {{frag, desc, 0}}, 128, DType::BFloat16, true,
                    false, false, 1);
  Expr wgF8 = wgmma(var(3, {DType::Float32, 64}), {{desc, desc, 0}}, 128, DType::Float8E4M3, false,
                    false, false, 0, DType::Float8E5M2);
  Expr wgClear = wgmma(var(3, {DType::Float32, 64}), {{desc, desc, 0}, {desc, desc, 0}}, 128,
                       DType::Float16, false, false, false, 0, std::nullopt, {}, {},
                       binary(BinOp::Lt, tid, constInt(64, DType::Int32)));
  Expr shared = binary(BinOp::Add, x, x); // x shared: printed once as a let

  Body loop = {
      stmt(CpAsync{0, binary(BinOp::Mul, idx, constInt(8)),
                   binary(BinOp::Shl, tid, constInt(4, DType::Int32))}),
      stmt(CpAsync{
          0, idx, constInt(256, DType::Int32),
          select(binary(BinOp::Lt, idx, n), constInt(8, DType::Int32), constInt(0, DType::Int32))}),
      stmt(CpAsyncCommit{}),
      stmt(CpAsyncWait{1}),
      stmt(FenceProxyAsync{}),
      stmt(FenceCta{}),
      stmt(Barrier{}),
      stmt(AssignVar{3, wg}),
      stmt(AssignVar{3, wgRs}),
      stmt(MbarrierInit{constInt(1024, DType::Int32), constInt(1, DType::Int32)}),
      stmt(FenceMbarrierInit{}),
      stmt(MbarrierArrive{constInt(1024, DType::Int32), constInt(4096, DType::Int32)}),
      stmt(TmaLoad{5,
                   {constInt(0, DType::Int32), cast(tid, kI32)},
                   constInt(0, DType::Int32),
                   constInt(1024, DType::Int32)}),
      stmt(MbarrierWait{constInt(1024, DType::Int32), param(6, DType::Int32)}),
      stmt(MbarrierArrive{constInt(1032, DType::Int32), nullptr}),
      stmt(SetMaxNReg{true, 232}),
      stmt(SetMaxNReg{false, 40}),
      stmt(WgmmaWait{0, {0, 5}}),
      stmt(Barrier{1, 128}),
      stmt(AssignVar{3, wgF8}),
      stmt(AssignVar{3, undef({DType::Float32, 64})}),
      stmt(AssignVar{3, wgClear}),
  };
  Body then = {stmt(GlobalAtomic{1, idx, unary(UnOp::Exp, x)}),
               stmt(Printf{"tid %d \"x\"=%f\n\t\x01\xff", {tid, x}})};
  Body otherwise = {stmt(SharedStore{constInt(64, DType::Int32), mma})};
  k.body = {
      stmt(DeclVar{0, kF32, shared}),
      stmt(DeclVar{1, kI32, shflXor(bitcast(var(0, kF32), kI32), 16)}),
      stmt(DeclVar{
          2, {DType::Float32, 4}, sharedLoad(constInt(16, DType::Int32), {DType::Float32, 4})}),
      stmt(DeclVar{3, {DType::Float32, 64}, broadcast(param(2, DType::Float32), 64)}),
      stmt(DeclVar{4,
                   {DType::Int32, 2},
                   makeVector({binary(BinOp::BitOr, unary(UnOp::BitNot, var(1, kI32)),
                                      binary(BinOp::Shr, var(1, kI32), constInt(3, DType::Int32))),
                               constInt(-7, DType::Int32)})}),
      stmt(DeclVar{5, kF32,
                   select(param(3, DType::Bool),
                          constFloat(std::numeric_limits<double>::infinity()), constFloat(-0.0))}),
      stmt(DeclVar{6, {DType::Float64, 1}, constFloat(std::nan("7"), DType::Float64)}),
      stmt(DeclVar{7, {DType::Float16, 1}, constFloat(1e-5, DType::Float16)}),
      stmt(DeclVar{8,
                   {DType::Bool, 1},
                   unary(UnOp::Not, binary(BinOp::And, constInt(1, DType::Bool),
                                           binary(BinOp::Ne, var(1, kI32),
                                                  constInt(INT64_MIN, DType::Int32))))}),
      stmt(ForStmt{9, kI32, constInt(0, DType::Int32), constInt(4, DType::Int32),
                   constInt(1, DType::Int32), loop, true}),
      stmt(IfStmt{binary(BinOp::Lt, var(1, kI32), constInt(3, DType::Int32)), then, otherwise}),
      stmt(IfStmt{var(8, {DType::Bool, 1}), {stmt(Barrier{})}, {}}),
      stmt(GlobalStore{
          1, idx, binary(BinOp::Max, var(0, kF32), binary(BinOp::Pow, x, constFloat(2.5))), 4}),
  };
  Module m;
  m.name = "every-thing"; // not an identifier: printed quoted
  m.kernels.push_back(std::move(k));
  return m;
}

} // namespace

TEST_CASE("a module using every node and statement verifies and round-trips") {
  Module m = everything();
  CHECK(verifyErrors(m).empty());
  std::string text = print(m);
  Parsed p = parse(text);
  INFO(p.diagnostics);
  REQUIRE(p.module);
  CHECK(print(*p.module) == text);
  CHECK(text.find("module \"every-thing\"") != std::string::npos);
  CHECK(text.find("grid=(((%N + 127) // 128), none, select((%N > 4), 2, 1))") != std::string::npos);
  CHECK(text.find("%flag: bool align 4") != std::string::npos);
  CHECK(text.find("%alpha: float32,") != std::string::npos);
  CHECK(text.find("wgmma.m64n64k16.float16.a_mn_major.b_mn_major(") != std::string::npos);
  CHECK(text.find("wgmma.m64n128k32.float8_e4m3.float8_e5m2(") != std::string::npos);
  CHECK(text.find("v3 = undef<float32x64>") != std::string::npos);
  CHECK(text.find(", [clear if (threadIdx.x < 64:int32)], [acc 0: ") != std::string::npos);
  CHECK(text.find("ldmatrix.x4.trans(smem[") != std::string::npos);
  CHECK(text.find("nan(0x7ff8000000000007):float64") != std::string::npos);
  CHECK(text.find("-0.0") != std::string::npos);
  CHECK(text.find("-9223372036854775808:int32") != std::string::npos);
  CHECK(text.find(R"(printf "tid %d \"x\"=%f\n\t\x01\xff", threadIdx.x)") != std::string::npos);
  CHECK(text.find("in range(0:int32, 4:int32, 1:int32) unroll {") != std::string::npos);
}

TEST_CASE("a subtree shared within a statement is one let and one node again") {
  Module m = everything();
  std::string text = print(m);
  CHECK(text.find("let $0 = cast<float32>(load<float16x4>(%A[cast<int64>(threadIdx.x)], "
                  "align 8)[lane 1])\n  var v0: float32 = ($0 + $0)") != std::string::npos);
  Parsed p = parse(text);
  REQUIRE(p.module);
  const auto &decl = std::get<DeclVar>(p.module->kernels[0].body[0].op);
  const auto &add = std::get<Binary>(decl.init->op);
  CHECK(add.a.get() == add.b.get());

  // Leaves are never named: one threadIdx.x node read twice needs no let.
  Expr tid = special(Special::ThreadIdxX);
  Kernel k;
  k.name = "k";
  k.body = {Stmt{DeclVar{0, kI32, binary(BinOp::Add, tid, tid)}}};
  Module leaves{"m", {k}};
  CHECK(print(leaves).find("  var v0: int32 = (threadIdx.x + threadIdx.x)\n}") !=
        std::string::npos);
}

TEST_CASE("hand-written text is accepted in a looser layout") {
  Parsed p = parse(R"(# comment
module m

kernel k(%A: tensor<float32, align 4>,
         %n: dim) threads=32 grid=(%n, none, none) dynamic_smem=0 {
  if (threadIdx.x < 4:int32) { barrier }
  store %A[(cast<int64>(threadIdx.x)
            + 1)] = 2.0, align 4   # trailing comment
}
)");
  INFO(p.diagnostics);
  REQUIRE(p.module);
  CHECK(print(*p.module) ==
        "module m\nkernel k(%A: tensor<float32, align 4>, %n: dim) threads=32 grid=(%n, none, "
        "none) dynamic_smem=0 {\n  if (threadIdx.x < 4:int32) {\n    barrier\n  }\n  store "
        "%A[(cast<int64>(threadIdx.x) + 1)] = 2.0, align 4\n}\n");
}

namespace {

std::string errorOf(std::string body, std::string params = "") {
  Parsed p = parse(fmt::format("module m\nkernel k({}) threads=32 grid=(none, none, none) "
                               "dynamic_smem=0 {{\n{}\n}}\n",
                               params, body));
  CHECK(!p.module);
  return p.diagnostics;
}

bool has(const std::string &s, std::string_view what) { return s.find(what) != std::string::npos; }

} // namespace

TEST_CASE("syntax errors are located and stop the parse") {
  CHECK(has(errorOf("  var v0: int32 = 1:int32 +"),
            "t.thir:3:27: error: expected the end of the line but found '+'"));
  CHECK(has(errorOf("  var v0: int32 = 12abc"), "t.thir:3:19: error: invalid number"));
  CHECK(has(errorOf("  printf \"\\q\""), "t.thir:3:11: error: unknown escape sequence"));
  CHECK(has(errorOf("  barrier @"), "t.thir:3:11: error: unexpected character '@'"));
  CHECK(has(errorOf("  let $ = 1"), "expected digits after '$'"));
  CHECK(has(errorOf("  var v0: float32x0 = 1.0"), "unknown type 'float32x0'"));
  CHECK(has(errorOf("  var v0: int64 = 99999999999999999999"), "integer literal out of range"));
  CHECK(has(errorOf("  var v0: float64 = 1e999:float64"), "float literal out of range"));
  CHECK(has(errorOf("  var v0: float64 = nan(0x1):float64"), "expected the bits of a NaN"));
  CHECK(has(errorOf("  var v0: float32x4 = ldmatrix.x3(smem[0:int32])"),
            "ldmatrix of 3 matrices (1, 2 or 4)"));
  CHECK(has(errorOf("  var v0: float32x4 = wgmma.m64n8k16.float16.rs.rs(v1)"), "malformed"));
  // float8 wgmma is k32, 16-bit types k16; B's type is written only where it differs.
  CHECK(has(errorOf("  var v0: float32x4 = wgmma.m64n8k16.float8_e4m3(v1)"), "malformed"));
  CHECK(has(errorOf("  var v0: float32x4 = wgmma.m64n8k32.float16(v1)"), "malformed"));
  CHECK(has(errorOf("  var v0: float32x4 = wgmma.m64n8k32.float8_e4m3.float8_e4m3(v1)"),
            "malformed"));
  CHECK(has(errorOf("  frob"), "unknown statement 'frob'"));
  CHECK(has(errorOf("  var v0: int32 = (1:int32 plus 2:int32)"),
            "expected a binary operator or ')'"));
  CHECK(has(errorOf("  let $0 = 1\n  let $0 = 2\n  barrier"), "$0 is already bound"));
  CHECK(has(errorOf("  cp.async smem[0:int32] <- %A[0], 8 bytes", "%A: tensor<float32, align 16>"),
            "the copy size in bytes (16) must be in 16..16"));
  CHECK(has(errorOf("  cp.async smem[0:int32] <- %A[0], 16 bytes, 8:int32",
                    "%A: tensor<float32, align 16>"),
            "t.thir:3:46: error: expected 'reading' but found '8'"));
  CHECK(has(errorOf("  var v0: int32 = %B", "%A: dim"), "unknown parameter '%B'"));
  CHECK(has(errorOf("}"), "expected 'kernel' but found '}'"));
}

TEST_CASE("the verifier reports what codegen would treat as a compiler bug") {
  auto errors = [](std::string body, std::string params = "", int smem = 0) {
    Parsed p = parse(fmt::format("module m\nkernel k({}) threads=32 grid=(none, none, none) "
                                 "dynamic_smem={} {{\n{}\n}}\n",
                                 params, smem, body));
    CHECK(!p.module);
    return p.diagnostics;
  };
  CHECK(has(errors("  var v0: int16 = shfl_xor(1:int16, 3)"),
            "shfl_xor of int16 (32- or 64-bit scalars only)"));
  CHECK(has(errors("  var v0: int32 = shfl_xor(1:int32, 64)"), "lane mask 64 outside 0..63"));
  CHECK(has(errors("  var v0: int32x4 = ldmatrix.x4(smem[0:int64])", "", 1024),
            "a shared memory offset must be int32, not int64"));
  CHECK(has(errors("  cp.async smem[0:int32] <- %A[0], 16 bytes, reading 8",
                   "%A: tensor<float32, align 16>", 1024),
            "the bytes a cp.async reads must be int32, not int64"));
  CHECK(has(
      errors("  smem[0:int32] = vector<float16x3>(1.0:float16, 1.0:float16, 1.0:float16)", "", 64),
      "shared memory access of float16x3 is not a power-of-two width"));
  CHECK(has(errors("  var v0: float32 = (1.0 & 2.0)"), "'&' on float32 (integers only)"));
  CHECK(has(errors("  var v0: float32 = (1.0 | 2.0)"), "'|' on float32 (integers only)"));
  CHECK(has(errors("  var v0: float32 = bitnot(1.0)"), "'bitnot' on float32 (integers only)"));
  CHECK(has(errors("  var v0: bool = (1:bool + 1:bool)"), "'+' on bool"));
  CHECK(has(errors("  var v0: float32 = exp(1:int32)"), "'exp' on int32"));
  CHECK(has(errors("  var v0: int32 = bitcast<int32>(1:int64)"), "changes the width"));
  CHECK(
      has(errors("  var v0: int32x2 = vector<int32x2>(1:int32)"), "vector<int32x2> of 1 elements"));
  CHECK(has(errors("  var v0: int32 = vector<int32x2>(1:int32, 2:int32)[lane 2]"),
            "lane 2 of int32x2"));
  CHECK(has(errors("  for v0: float32 in range(0.0, 1.0, 1.0) {\n  }"),
            "loop variable of type float32"));
  CHECK(has(errors("  var v0: int32 = 1:int32\n  var v0: int64 = 1"),
            "v0 redeclared as int64 (declared int32 before)"));
  CHECK(has(errors("  v0 = 1"), "v0 assigned before its declaration"));
  CHECK(has(errors("  if 1:int32 {\n  }"), "an if condition must be bool, not int32"));
  CHECK(has(errors("  printf \"%f\", broadcast<float32x2>(1.0)"),
            "printf argument of type float32x2"));
  CHECK(has(errors("  atomic_add %A[0] += 1:bool", "%A: tensor<bool, align 1>"),
            "atomic add on a bool tensor"));
  CHECK(has(errors("  barrier", "%A: tensor<float32, align 3>"),
            "alignment 3 is not a power of two"));
  CHECK(has(errors("  barrier", "%A: dim, %A: dim"), "two parameters named 'A'"));
  CHECK(has(errors("  cp.async.wait 0", "%n: dim<int32>"),
            "a dimension parameter is int64, not int32"));
  CHECK(has(
      errors("  var v0: float32x4 = mma.m16n8k16.float32(vector<int32x4>(1:int32, 1:int32, "
             "1:int32, 1:int32), vector<int32x2>(1:int32, 1:int32), broadcast<float32x4>(1.0))"),
      "mma on float32 (float16 or bfloat16)"));
  CHECK(has(errors("  var v0: float32x4 = mfma.m16n16k16.float32(broadcast<float32x4>(1.0), "
                   "broadcast<float32x4>(1.0), broadcast<float32x4>(0.0))"),
            "mfma on float32 (float16 or bfloat16)"));
  CHECK(
      has(errors("  var v0: float32x4 = mfma.m16n16k16.float16(broadcast<float16x4>(1.0:float16), "
                 "broadcast<float16x4>(1.0:float16), broadcast<float32x16>(0.0))"),
          "mfma operand C must be float32x4, not float32x16"));
  CHECK(has(errors("  var v0: float32x4 = mfma.m16n8k16.float16(broadcast<float16x4>(1.0), "
                   "broadcast<float16x4>(1.0), broadcast<float32x4>(0.0))"),
            "mfma.m32n32k8 or mfma.m16n16k16"));
  const char *desc = "cast<int64>(smem_address(0:int32))";
  CHECK(has(errors(fmt::format("  var v0: float32x4 = wgmma.m64n8k32.float8_e4m3.b_mn_major("
                               "broadcast<float32x4>(1.0), [acc 0: {}, {}])",
                               desc, desc),
                   "", 1024),
            "float8 wgmma with an MN-major operand"));
  CHECK(has(errors(fmt::format("  var v0: float32x4 = wgmma.m64n8k16.float16.float8_e4m3("
                               "broadcast<float32x4>(1.0), [acc 0: {}, {}])",
                               desc, desc),
                   "", 1024),
            "wgmma on float16 x float8_e4m3"));
  Parsed bad = parse("module m\nkernel k() threads=2048 grid=(threadIdx.x, none, none) "
                     "dynamic_smem=0 {\n}\nkernel k() threads=32 grid=(none, none, none) "
                     "dynamic_smem=0 {\n}\nkernel j() threads=1024 grid=(none, none, none) "
                     "dynamic_smem=0 blocks_per_sm=3 {\n}\nkernel p() threads=32 grid=(none, none, "
                     "none) dynamic_smem=0 persistent=33 {\n}\nkernel q() threads=32 grid=(none, "
                     "none, none) dynamic_smem=0 balance_x {\n}\n");
  CHECK(has(bad.diagnostics, "t.thir:2:1: error: block size 2048 outside 1..1024"));
  CHECK(
      has(bad.diagnostics,
          "t.thir:6:1: error: 3 blocks of 1024 threads per SM (at most 2048 threads, 32 blocks)"));
  CHECK(has(bad.diagnostics, "t.thir:8:1: error: 33 persistent blocks per SM (at most 32)"));
  CHECK(has(bad.diagnostics, "t.thir:10:1: error: balance_x on a kernel that is not persistent"));
  CHECK(has(bad.diagnostics, "t.thir:2:31: error: a grid expression may only use"));
  CHECK(has(bad.diagnostics, "t.thir:4:1: error: two kernels named 'k'"));
}

TEST_CASE("a builder-made module with errors is reported by kernel") {
  Kernel k;
  k.name = "k";
  k.params = {{"A", ParamKind::Tensor, DType::Float32, 16, {}}};
  k.body = {Stmt{GlobalStore{0, constInt(0), var(5, {DType::Float32, 1}), 4}},
            Stmt{GlobalStore{1, constInt(0), constFloat(1.0), 4}}};
  Module m{"m", {k}};
  std::string errors = verifyErrors(m);
  CHECK(has(errors, "error: in kernel 'k': v5 used before its declaration"));
  CHECK(has(errors, "error: in kernel 'k': parameter index 1 out of range"));

  // What the parser cannot produce: a map whose element type is not its tensor's, a null extent.
  Kernel t;
  t.name = "t";
  t.params = {{"A", ParamKind::Tensor, DType::Float32, 16, {}},
              {"M", ParamKind::TensorMap, DType::Float16, 0, {0, {nullptr}, {}, {8}, 0}}};
  std::string mapErrors = verifyErrors(Module{"m", {t}});
  CHECK(has(mapErrors, "tensor map of float16 over a float32 tensor"));
  CHECK(has(mapErrors, "missing tensor map extent or stride"));

  // A shuffle whose node type is not its value's (the parser and thir::shfl give it that type).
  Kernel s;
  s.name = "s";
  Type f32{DType::Float32, 1};
  Expr mistyped = std::make_shared<const Node>(
      Node{f32, Shfl{ShflMode::Down, constInt(1, DType::Int32), constInt(1, DType::Int32)}});
  s.body = {Stmt{DeclVar{0, f32, mistyped}}};
  CHECK(has(verifyErrors(Module{"m", {s}}),
            "error: in kernel 's': shfl.down of int32 typed float32"));
}

TEST_CASE("no input crashes the parser") {
  // Mutations of a valid text: every prefix and random byte edits.
  std::string text = print(everything());
  for (size_t n = 0; n < text.size(); n += 97)
    (void)parse(text.substr(0, n));
  std::mt19937 rng(12345);
  for (int i = 0; i < 300; ++i) {
    std::string t = text;
    for (int j = 0; j < 4; ++j)
      t[rng() % t.size()] = static_cast<char>(rng() % 256);
    Parsed p = parse(t);
    if (p.module) {
      std::string again = print(*p.module);
      Parsed q = parse(again);
      REQUIRE(q.module);
      CHECK(print(*q.module) == again);
    }
  }
}

TEST_CASE("a persistent launch's block count: every tile's, or the SMs', and coprime with the "
          "grid's x extent where tiles differ along x") {
  CHECK(persistentLaunchBlocks(4096, 132, 32, false) == 132);
  CHECK(persistentLaunchBlocks(4096, 132, 32, true) == 131); // 132 and 32 share 4
  CHECK(persistentLaunchBlocks(4096, 132, 33, true) == 131); // 132 = 4 x 33
  CHECK(persistentLaunchBlocks(4096, 132, 7, true) == 132);  // already coprime
  CHECK(persistentLaunchBlocks(4096, 264, 30, true) == 263);
  CHECK(persistentLaunchBlocks(100, 132, 32, true) == 100); // one block per tile
  CHECK(persistentLaunchBlocks(4096, 132, 1, true) == 132); // one row block: nothing to balance
  CHECK(persistentLaunchBlocks(4096, 2, 2, true) == 1);
}
