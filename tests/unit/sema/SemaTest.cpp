// Semantic analysis: programs given as strings are parsed and analyzed, and the tile IR (its
// printed form or its structure) is checked.
#include "sema/Sema.h"
#include "syntax/Parser.h"
#include "tileir/Arith.h"
#include "tileir/TileIR.h"

#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace tilec;

namespace {

struct Analyzed {
  std::optional<tile::Program> program;
  std::string ir;                  // tile::print of the program, empty on failure
  std::vector<std::string> errors; // "line:col: message" of every error
  std::vector<std::string> others; // warnings and notes, "severity line:col: message"
  std::string rendered;
};

Analyzed analyze(const std::string &text, sema::Options opts = {}) {
  SourceManager sm;
  uint32_t file = sm.addBuffer("test.tile", text);
  DiagnosticEngine diags(sm);
  Analyzed a;
  auto module = parseModule(sm, file, diags);
  INFO(diags.renderAll());
  REQUIRE(module.has_value());
  if (opts.stem.empty())
    opts.stem = "test";
  a.program = sema::analyze(*module, sm, diags, opts);
  // The contract: a program comes back exactly when no error was reported.
  CHECK(a.program.has_value() == !diags.hasErrors());
  for (const Diagnostic &d : diags.diagnostics()) {
    std::string s = fmt::format("{}:{}: {}", d.loc.line, d.loc.col, d.message);
    if (d.severity == Severity::Error)
      a.errors.push_back(s);
    else
      a.others.push_back(
          fmt::format("{} {}", d.severity == Severity::Warning ? "warning" : "note", s));
  }
  a.rendered = diags.renderAll();
  if (a.program)
    a.ir = tile::print(*a.program);
  return a;
}

/// The printed tile IR of a program that must analyze cleanly.
std::string ir(const std::string &text, sema::Options opts = {}) {
  Analyzed a = analyze(text, std::move(opts));
  INFO(text);
  CHECK_MESSAGE(a.errors.empty(), a.rendered);
  return a.ir;
}

/// The first error of a program that must fail.
std::string firstError(const std::string &text, sema::Options opts = {}) {
  Analyzed a = analyze(text, std::move(opts));
  INFO(text);
  CHECK_FALSE(a.program.has_value());
  REQUIRE_FALSE(a.errors.empty());
  return a.errors.front();
}

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

/// A kernel around `body` (given indented by 8 spaces) with one 1-D float16 tensor `A`.
std::string kernel(const std::string &body,
                   const std::string &params = "A: Tensor((128,), float16)",
                   const std::string &prelude = "") {
  return prelude + "@kernel\ndef k(" + params + "):\n    with Kernel(4, threads=128) as bx:\n" +
         body;
}

/// The statements of the first kernel's body.
const tile::Body &bodyOf(const Analyzed &a) {
  REQUIRE(a.program.has_value());
  REQUIRE(!a.program->kernels.empty());
  return a.program->kernels.front().body;
}

/// A temporary directory removed at the end of the test.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           fmt::format("tilec-sema-test-{}-{}", ::getpid(), counter++);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  void write(const std::string &rel, const std::string &text) const {
    std::filesystem::path p = path / rel;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
};

} // namespace

TEST_CASE("constants are folded, including float arithmetic and powers") {
  std::string out = ir(kernel("        for i in Parallel(128):\n"
                              "            A[i] = A[i] * scale\n",
                              "A: Tensor((128,), float16)",
                              "const D = 64\nconst scale = (1.0 / D) ** 0.5 * 1.44269504\n"));
  CHECK(contains(out, "A[i] = (A[i] * 0.18033688)"));

  // Integer constants fold too, and feed shapes and extents.
  out = ir(kernel("        S = alloc_shared((block * 2, block // 4), float16)\n"
                  "        for i in Parallel(ceildiv(1000, block)):\n"
                  "            A[i] = 0\n",
                  "A: Tensor((128,), float16)", "const block = 64\n"));
  CHECK(contains(out, "alloc shared S: float16[128, 16]"));
  CHECK(contains(out, "for parallel i in [0, +16)"));
}

TEST_CASE("-D overrides a constant") {
  const std::string src = kernel("        for i in Parallel(block):\n"
                                 "            A[i] = 0\n",
                                 "A: Tensor((N,), float16)", "const block = 128\n");
  CHECK(contains(ir(src), "for parallel i in [0, +128)"));
  sema::Options o;
  o.defines["block"] = "64";
  CHECK(contains(ir(src, o), "for parallel i in [0, +64)"));
  // Hex and underscores are accepted as in the language.
  o.defines["block"] = "0x2_0";
  CHECK(contains(ir(src, o), "for parallel i in [0, +32)"));
  // A dtype constant is overridden by a dtype.
  sema::Options od;
  od.defines["dtype"] = "bfloat16";
  std::string out =
      ir(kernel("        pass\n", "A: Tensor((N,), dtype)", "const dtype = float16\n"), od);
  CHECK(contains(out, "A: bfloat16[N]"));
}

TEST_CASE("-D turns a symbolic dimension into a constant") {
  const std::string src =
      kernel("        pass\n", "A: Tensor((M, K), float16), B: Tensor((K, N), float16)");
  CHECK(contains(ir(src), "dims(M, K, N)"));
  sema::Options o;
  o.defines["K"] = "4096";
  std::string out = ir(src, o);
  CHECK(contains(out, "A: float16[M, 4096], B: float16[4096, N]) dims(M, N)"));
}

TEST_CASE("-D of a bad value and unused -D") {
  sema::Options o;
  o.defines["block"] = "abc";
  Analyzed a =
      analyze(kernel("        pass\n", "A: Tensor((128,), float16)", "const block = 128\n"), o);
  CHECK_FALSE(a.program.has_value());
  REQUIRE(a.errors.size() == 1); // no cascade: the written value stands in
  CHECK(a.errors[0] == "1:7: invalid value 'abc' for -D block: expected an integer, a float, True, "
                       "False or a dtype");

  sema::Options u;
  u.defines["blokc"] = "64";
  a = analyze(kernel("        pass\n"), u);
  CHECK(a.program.has_value());
  REQUIRE(a.others.size() == 1);
  CHECK(a.others[0] == "warning 0:0: -D blokc matches no constant or symbolic dimension");
}

TEST_CASE("symbolic dimensions: order of first appearance, shared across parameters") {
  Analyzed a =
      analyze(kernel("        pass\n", "A: Tensor((M, K), float16), B: Tensor((K, N), float16), "
                                       "C: Tensor([M, N], float32), n: int32"));
  REQUIRE(a.program.has_value());
  const tile::Kernel &k = a.program->kernels.at(0);
  REQUIRE(k.dims.size() == 3);
  CHECK(k.dims[0]->name == "M");
  CHECK(k.dims[1]->name == "K");
  CHECK(k.dims[2]->name == "N");
  for (int i = 0; i < 3; ++i) {
    CHECK(k.dims[i]->index == i);
    CHECK(k.dims[i]->kind == tile::VarKind::Dim);
  }
  REQUIRE(k.params.size() == 4);
  auto dimVar = [&](int param, int d) {
    auto *ref = std::get_if<tile::VarRef>(&k.params[param].tensor->shape[d]->op);
    REQUIRE(ref != nullptr);
    return ref->var;
  };
  CHECK(dimVar(0, 1) == dimVar(1, 0)); // K is one dimension
  CHECK(dimVar(0, 0) == dimVar(2, 0)); // M
  CHECK(dimVar(1, 1) == dimVar(2, 1)); // N
  CHECK(k.params[3].kind == tile::ParamKind::Scalar);
  CHECK(k.params[3].scalar->dtype == DType::Int32);
}

TEST_CASE("dtype aliases and strings resolve to the same dtypes") {
  std::string out = ir(kernel("        S = alloc_shared((16,), \"float32\")\n"
                              "        F = alloc_fragment((16,), T.bfloat16)\n"
                              "        L = alloc_local((4,), acc)\n"
                              "        v = alloc_var(i64)\n"
                              "        w = alloc_var(A.dtype)\n",
                              "A: Tensor((N,), f16), B: Tensor((N,), \"bfloat16\"), s: f32, "
                              "t: Tensor((N,), dt)",
                              "const dt = u8\nconst acc = \"float64\"\n"));
  CHECK(contains(out, "A: float16[N], B: bfloat16[N], s: float32, t: uint8[N]"));
  CHECK(contains(out, "alloc shared S: float32[16]"));
  CHECK(contains(out, "alloc fragment F: bfloat16[16]"));
  CHECK(contains(out, "alloc local L: float64[4]"));
  CHECK(contains(out, "alloc var v: int64[]"));
  CHECK(contains(out, "alloc var w: float16[]"));
}

TEST_CASE("macros are inlined at their use") {
  const std::string prelude = "@macro\n"
                              "def silu(x):\n"
                              "    return x / (1.0 + exp(-x))\n"
                              "\n"
                              "@macro\n"
                              "def axpy(a, x, y):\n"
                              "    t = a * x\n"
                              "    return t + y\n"
                              "\n"
                              "@macro\n"
                              "def zero(buf):\n"
                              "    clear(buf)\n"
                              "\n";
  std::string out = ir(kernel("        S = alloc_shared((128,), float16)\n"
                              "        zero(S)\n"
                              "        for i in Parallel(128):\n"
                              "            A[i] = silu(A[i])\n"
                              "            S[i] = axpy(2.0, y=A[i], x=S[i])\n",
                              "A: Tensor((128,), float16)", prelude));
  CHECK(contains(out, "fill S[0+:128] = 0.0"));
  CHECK(contains(out, "A[i] = (A[i] / (1.0 + exp(-A[i])))"));
  CHECK(contains(out, "S[i] = ((2.0 * S[i]) + A[i])"));
  CHECK_FALSE(contains(out, "silu"));
  CHECK_FALSE(contains(out, "axpy"));
}

TEST_CASE("modules are imported from the search path") {
  TempDir dir;
  dir.write("mylib/acts.tile", "const slope = 0.5\n"
                               "@macro\n"
                               "def leaky(x):\n"
                               "    return x if x > 0 else x * slope\n"
                               "@macro\n"
                               "def twice(x):\n"
                               "    return x * 2\n");
  sema::Options o;
  o.moduleSearchPath = {dir.path.string()};
  std::string out = ir(kernel("        for i in Parallel(128):\n"
                              "            A[i] = leaky(A[i])\n"
                              "            A[i] = mylib.acts.twice(A[i])\n"
                              "            A[i] = acts2.twice(A[i]) * mylib.acts.slope\n",
                              "A: Tensor((128,), float16)",
                              "import mylib.acts\n"
                              "import mylib.acts as acts2\n"
                              "from mylib.acts import leaky\n"),
                       o);
  CHECK(contains(out, "A[i] = select((A[i] > 0.0), A[i], (A[i] * 0.5))"));
  CHECK(contains(out, "A[i] = (A[i] * 2.0)"));
  CHECK(contains(out, "A[i] = ((A[i] * 2.0) * 0.5)"));

  // Without the directory on the search path the module is not found.
  CHECK(firstError(kernel("        pass\n", "A: Tensor((128,), float16)", "import mylib.acts\n")) ==
        "1:8: module 'mylib.acts' not found (searched: nothing)");
  // A name the module does not define.
  CHECK(firstError(
            kernel("        pass\n", "A: Tensor((128,), float16)", "from mylib.acts import gelu\n"),
            o) == "1:24: module 'mylib.acts' has no name 'gelu'");
}

TEST_CASE("a compile-time if drops the other branch; a runtime if is kept") {
  const std::string prelude = "const use_bias = False\n";
  std::string out = ir(kernel("        for i in Parallel(128):\n"
                              "            if use_bias:\n"
                              "                A[i] = A[i] + undeclared_bias\n"
                              "            else:\n"
                              "                A[i] = 1\n"
                              "            if bx > 1:\n"
                              "                A[i] = 2\n",
                              "A: Tensor((128,), float16)", prelude));
  CHECK_FALSE(contains(out, "undeclared_bias"));
  CHECK(contains(out, "    A[i] = 1.0\n"));
  CHECK(contains(out, "if (bx > 1):\n      A[i] = 2.0\n"));
  sema::Options o;
  o.defines["use_bias"] = "True";
  CHECK(firstError(kernel("        for i in Parallel(128):\n"
                          "            if use_bias:\n"
                          "                A[i] = A[i] + undeclared_bias\n",
                          "A: Tensor((128,), float16)", prelude),
                   o) == "7:31: use of undeclared name 'undeclared_bias'");

  // The structure: exactly one If, inside the loop.
  Analyzed a = analyze(kernel("        for i in Parallel(128):\n"
                              "            if use_bias:\n"
                              "                A[i] = 3\n"
                              "            if i < 64:\n"
                              "                A[i] = 2\n"
                              "            else:\n"
                              "                A[i] = 1\n",
                              "A: Tensor((128,), float16)", prelude));
  const tile::Body &body = bodyOf(a);
  REQUIRE(body.size() == 1);
  auto *loop = std::get_if<tile::For>(&body[0].op);
  REQUIRE(loop != nullptr);
  REQUIRE(loop->body.size() == 1);
  auto *ifs = std::get_if<tile::If>(&loop->body[0].op);
  REQUIRE(ifs != nullptr);
  CHECK(ifs->then.size() == 1);
  CHECK(ifs->otherwise.size() == 1);
}

TEST_CASE("sliced regions: extents and dropped dimensions") {
  Analyzed a = analyze("@kernel\n"
                       "def k(Q: Tensor((B, S, H, 64), float16)):\n"
                       "    with Kernel(ceildiv(S, 128), H, B, threads=128) as (bx, by, bz):\n"
                       "        Qs = alloc_shared((128, 64), float16)\n"
                       "        copy(Q[bz, bx * 128:(bx + 1) * 128, by, :], Qs)\n");
  const tile::Body &body = bodyOf(a);
  REQUIRE(body.size() == 1);
  auto *copy = std::get_if<tile::Copy>(&body[0].op);
  REQUIRE(copy != nullptr);
  const tile::Region &src = copy->src;
  REQUIRE(src.dims.size() == 4);
  CHECK(src.dims[0].dropped);
  CHECK_FALSE(src.dims[1].dropped);
  CHECK(tile::asConstInt(src.dims[1].extent) == 128);
  CHECK(tile::print(src.dims[1].begin) == "(bx * 128)");
  CHECK(src.dims[2].dropped);
  CHECK(tile::asConstInt(src.dims[3].extent) == 64);
  CHECK(tile::asConstInt(src.dims[3].begin) == 0);
  auto shape = src.shape();
  REQUIRE(shape.size() == 2);
  CHECK(tile::asConstInt(shape[0]) == 128);
  CHECK(tile::asConstInt(shape[1]) == 64);
  CHECK(contains(a.ir, "copy Q[bz, (bx * 128)+:128, by, 0+:64] -> Qs[0+:128, 0+:64]"));
}

TEST_CASE("corner-form operands take their extent from the other operand") {
  std::string out = ir("@kernel\n"
                       "def k(A: Tensor((M, K), float16), Q: Tensor((B, S, 64), float16)):\n"
                       "    with Kernel(4, 4, threads=128) as (bx, by):\n"
                       "        As = alloc_shared((128, 32), float16)\n"
                       "        Qs = alloc_shared((64, 64), float16)\n"
                       "        for ko in Pipelined(ceildiv(K, 32), num_stages=2):\n"
                       "            copy(A[by * 128, ko * 32], As)\n"
                       "        copy(Q[bx, by * 64, 0], Qs)\n"
                       "        copy(As, A[by * 128, 0])\n");
  CHECK(contains(out, "copy A[(by * 128)+:128, (ko * 32)+:32] -> As[0+:128, 0+:32]"));
  // A leading dimension the other operand lacks is taken one at a time and dropped.
  CHECK(contains(out, "copy Q[bx, (by * 64)+:64, 0+:64] -> Qs[0+:64, 0+:64]"));
  CHECK(contains(out, "copy As[0+:128, 0+:32] -> A[(by * 128)+:128, 0+:32]"));
}

TEST_CASE("weak typing: literals adopt the other operand's type") {
  std::string out = ir(kernel("        for i in Parallel(128):\n"
                              "            x = A[i]\n"
                              "            y = x * 2\n"
                              "            z = 0.5 + y\n"
                              "            w = x * s\n"
                              "            n = i * 2\n"
                              "            A[i] = z\n",
                              "A: Tensor((128,), float16), s: float32"));
  CHECK(contains(out, "let x: float16 = A[i]"));
  CHECK(contains(out, "let y: float16 = (x * 2.0)"));
  CHECK(contains(out, "let z: float16 = (0.5 + y)"));
  CHECK(contains(out, "let n: int32 = (i * 2)"));
  // Two typed operands promote: float16 * float32 is float32.
  CHECK(contains(out, "let w: float32 ="));
}

TEST_CASE("rebinding a scalar keeps its type; alloc_var updates are stores") {
  std::string out = ir(kernel("        v = alloc_var(float32, 0)\n"
                              "        x = 1.0\n"
                              "        for ko in range(4):\n"
                              "            v += ko\n"
                              "            x = x * 2\n",
                              "A: Tensor((128,), float16)"));
  CHECK(contains(out, "alloc var v: float32[] = 0.0"));
  CHECK(contains(out, "v = (v + float32(ko))"));
  CHECK(contains(out, "let x: float32 = (x * 2.0)"));
}

TEST_CASE("loops: kinds, extents and steps") {
  std::string out = ir(kernel("        for a in range(2, 10, 3):\n"
                              "            pass\n"
                              "        for b in serial(8):\n"
                              "            pass\n"
                              "        for c in unroll(4):\n"
                              "            pass\n"
                              "        for d in Pipelined(16, num_stages=3):\n"
                              "            pass\n",
                              "A: Tensor((128,), float16)"));
  CHECK(contains(out, "for serial a in [2, +3) step 3:"));
  CHECK(contains(out, "for serial b in [0, +8):"));
  CHECK(contains(out, "for unroll c in [0, +4):"));
  CHECK(contains(out, "for pipelined d in [0, +16) stages=3:"));
}

TEST_CASE("errors: analysis returns nullopt and reports the right message and location") {
  CHECK(firstError(kernel("        for i in Parallel(128):\n"
                          "            A[i] = i / 2\n")) ==
        "5:20: '/' on two integers; write '//' for integer division or make one operand a float");
  CHECK(firstError(kernel("        x = foo + 1\n")) == "4:13: use of undeclared name 'foo'");
  CHECK(firstError("const a = 1\nconst a = 2\n" + kernel("        pass\n")) ==
        "2:7: redefinition of 'a'");
  CHECK(firstError(kernel("        As = alloc_shared((128, 32), float16)\n"
                          "        Bs = alloc_shared((64, 128), float16)\n"
                          "        C = alloc_fragment((128, 128), float32)\n"
                          "        gemm(As, Bs, C)\n")) ==
        "7:9: gemm shapes do not agree: A is [128, 32], B is [64, 128], C is [128, 128]; "
        "expected A (M, K), B (K, N), C (M, N)");
  CHECK(firstError(kernel("        S = alloc_shared((128, 64), float16)\n"
                          "        copy(A[0:64], S)\n",
                          "A: Tensor((N,), float16)")) ==
        "5:9: copy: the shapes of 'A' [64] and 'S' [128, 64] do not match");
  CHECK(firstError(kernel("        S = alloc_shared((128, 64), float16)\n"
                          "        copy(A[bx], S)\n",
                          "A: Tensor((N,), float16)")) ==
        "5:14: 'A' has 1 dimension(s) but the other operand is a 2-D tile");
  CHECK(firstError(kernel("        for i in Parallel(N):\n"
                          "            pass\n",
                          "A: Tensor((N,), float16)")) ==
        "4:27: a Parallel extent must be a compile-time constant");
  CHECK(firstError("@kernel\ndef k(A: Tensor((128,), float16)):\n"
                   "    with Kernel(1, threads=100) as bx:\n        pass\n") ==
        "3:28: threads must be a multiple of 32 (a whole number of warps), got 100");
  CHECK(firstError("const block = 128\n" + kernel("        block = 64\n")) ==
        "5:9: cannot assign to 'block': it is a constant");
  CHECK(firstError(kernel("        x, y = 1, 2\n")) ==
        "4:9: not supported yet: tuple assignment; assign each name on its own line");
  CHECK(firstError(kernel("        pass\n", "A: Tensor((128,), float17)")) ==
        "2:25: unknown dtype 'float17'");
  CHECK(firstError("const x = 1\n") == "1:1: no @kernel function in this file");
}

TEST_CASE("macro recursion stops at the depth limit") {
  Analyzed a = analyze("@macro\ndef f(x):\n    return f(x) + 1\n" +
                       kernel("        for i in Parallel(128):\n            A[i] = f(A[i])\n"));
  CHECK_FALSE(a.program.has_value());
  REQUIRE(a.errors.size() == 1);
  CHECK(contains(a.errors[0], "macro expansion too deep (limit 32) while expanding 'f'"));
}

TEST_CASE("print of a sliced region is a tile print") {
  std::string out = ir(kernel("        S = alloc_shared((128,), float16)\n"
                              "        print(S[0:64], msg=\"half\")\n"
                              "        print(bx)\n"));
  CHECK(contains(out, "print S[0+:64] \"half\""));
  CHECK(contains(out, "print bx \"\""));
}

TEST_CASE("docs/language.md's reference lists exactly the builtin names sema accepts") {
  std::ifstream in(std::string(TILEC_SOURCE_DIR) + "/docs/language.md");
  REQUIRE(in.good());
  std::vector<std::string> documented;
  bool inReference = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("## ", 0) == 0)
      inReference = line == "## Reference: every builtin name";
    else if (inReference && line.rfind("| `", 0) == 0)
      documented.push_back(line.substr(3, line.find('`', 3) - 3));
  }
  std::sort(documented.begin(), documented.end());
  std::vector<std::string> accepted = sema::builtinNameList();
  CHECK(accepted.size() > 50);
  for (const std::string &n : accepted)
    CHECK_MESSAGE(std::binary_search(documented.begin(), documented.end(), n),
                  "not in the reference: " << n);
  for (const std::string &n : documented)
    CHECK_MESSAGE(std::binary_search(accepted.begin(), accepted.end(), n),
                  "documented but not accepted: " << n);
  CHECK(std::adjacent_find(documented.begin(), documented.end()) == documented.end());
}
