#include "syntax/Parser.h"
#include "syntax/ASTPrinter.h"

#include <doctest/doctest.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace tilec;

namespace {

struct Parsed {
  std::optional<ast::Module> module;
  std::vector<std::string> errors; // "line:col: message"
  std::string rendered;
};

Parsed parse(std::string text) {
  SourceManager sm;
  uint32_t file = sm.addBuffer("test.tile", std::move(text));
  DiagnosticEngine diags(sm);
  Parsed p;
  p.module = parseModule(sm, file, diags);
  for (const Diagnostic &d : diags.diagnostics())
    p.errors.push_back(fmt::format("{}:{}: {}", d.loc.line, d.loc.col, d.message));
  p.rendered = diags.renderAll();
  // The contract: a module comes back exactly when no error was reported.
  CHECK(p.module.has_value() == !diags.hasErrors());
  return p;
}

/// The dump of a program that must parse cleanly.
std::string dump(const std::string &text) {
  Parsed p = parse(text);
  INFO(text);
  CHECK_MESSAGE(p.errors.empty(), p.rendered);
  return p.module ? printAST(*p.module) : "<error>";
}

/// The dump of one expression, parsed as the value of a constant.
std::string expr(const std::string &text) {
  Parsed p = parse("const x = " + text + "\n");
  INFO(text);
  CHECK_MESSAGE(p.errors.empty(), p.rendered);
  if (!p.module)
    return "<error>";
  return printExpr(*std::get<ast::ConstDecl>(p.module->items.at(0)).value);
}

/// The dump of statements written as the body of a def (given unindented).
std::string body(const std::string &text) {
  std::string src = "def f():\n";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    src += "    " + line + "\n";
  std::string out = dump(src);
  const std::string head = "(def f (params)";
  REQUIRE(out.rfind(head, 0) == 0);
  out = out.substr(head.size());
  // Drop the def's closing paren and newline, and one level of indentation.
  out = out.substr(0, out.size() - 2);
  std::string result;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty())
      result += (result.empty() ? "" : "\n") + line.substr(std::min<size_t>(2, line.size()));
  return result;
}

std::vector<std::string> errors(const std::string &text) { return parse(text).errors; }

std::string firstError(const std::string &text) {
  Parsed p = parse(text);
  return p.errors.empty() ? "<no error>" : p.errors.front();
}

std::string bodyError(const std::string &text) {
  std::string src = "def f():\n";
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    src += "    " + line + "\n";
  return firstError(src);
}

std::string repeat(const std::string &s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += s;
  return out;
}

} // namespace

TEST_CASE("parser: literals and atoms") {
  CHECK(expr("128") == "(int 128)");
  CHECK(expr("0x80") == "(int 128)");
  CHECK(expr("1.0") == "(float 1.0)");
  CHECK(expr("1e-6") == "(float 1e-06)");
  CHECK(expr("True") == "(bool True)");
  CHECK(expr("'col'") == "(str \"col\")");
  CHECK(expr("'a' \"b\"") == "(str \"ab\")");
  CHECK(expr("float16") == "(name float16)");
  CHECK(expr("()") == "(tuple)");
  CHECK(expr("(a,)") == "(tuple (name a))");
  CHECK(expr("(a, b)") == "(tuple (name a) (name b))");
  CHECK(expr("(a, b,)") == "(tuple (name a) (name b))");
  CHECK(expr("(a)") == "(name a)");
  CHECK(expr("a, b") == "(tuple (name a) (name b))");
  CHECK(expr("[]") == "(list)");
  CHECK(expr("[1, 2,]") == "(list (int 1) (int 2))");
  CHECK(expr("{}") == "(dict)");
  CHECK(expr("{a: f(a), b: 2,}") ==
        "(dict ((name a) (call (name f) (name a))) ((name b) (int 2)))");
}

TEST_CASE("parser: operator precedence") {
  CHECK(expr("a + b * c") == "(+ (name a) (* (name b) (name c)))");
  CHECK(expr("(a + b) * c") == "(* (+ (name a) (name b)) (name c))");
  CHECK(expr("a - b - c") == "(- (- (name a) (name b)) (name c))");
  CHECK(expr("a // b % c / d") == "(/ (% (// (name a) (name b)) (name c)) (name d))");
  CHECK(expr("a ** b ** c") == "(** (name a) (** (name b) (name c)))");
  CHECK(expr("-x ** 2") == "(neg (** (name x) (int 2)))");
  CHECK(expr("2 ** -x") == "(** (int 2) (neg (name x)))");
  CHECK(expr("-a * +b") == "(* (neg (name a)) (pos (name b)))");
  CHECK(expr("--a") == "(neg (neg (name a)))");
  CHECK(expr("a + 1 < b * 2") == "(< (+ (name a) (int 1)) (* (name b) (int 2)))");
  CHECK(expr("not a and b or c") == "(or (and (not (name a)) (name b)) (name c))");
  CHECK(expr("a or b and not c == d") ==
        "(or (name a) (and (name b) (not (== (name c) (name d)))))");
  CHECK(expr("a if c else b") == "(ifexp (name c) (name a) (name b))");
  CHECK(expr("a if c else b if d else e") ==
        "(ifexp (name c) (name a) (ifexp (name d) (name b) (name e)))");
  CHECK(expr("x + 1 if a or b else -y") ==
        "(ifexp (or (name a) (name b)) (+ (name x) (int 1)) (neg (name y)))");
  CHECK(expr("a != b") == "(!= (name a) (name b))");
  CHECK(expr("a >= b") == "(>= (name a) (name b))");
  CHECK(expr("(1.0 / D) ** 0.5 * 1.44269504") ==
        "(* (** (/ (float 1.0) (name D)) (float 0.5)) (float 1.44269504))");
}

TEST_CASE("parser: postfix expressions") {
  CHECK(expr("T.copy(a, b)") == "(call (attr (name T) copy) (name a) (name b))");
  CHECK(expr("f(a, b=1, c=x + 1)") ==
        "(call (name f) (name a) (kw b (int 1)) (kw c (+ (name x) (int 1))))");
  CHECK(expr("f()") == "(call (name f))");
  CHECK(expr("f(a,)") == "(call (name f) (name a))");
  CHECK(expr("buf.shape[0]") == "(subscript (attr (name buf) shape) (int 0))");
  CHECK(expr("std.activations.gelu(x)") ==
        "(call (attr (attr (name std) activations) gelu) (name x))");
  CHECK(expr("A[b, s0:s1, h, :]") ==
        "(subscript (name A) (name b) (slice (name s0) (name s1)) (name h) (slice _ _))");
  CHECK(expr("x[:n]") == "(subscript (name x) (slice _ (name n)))");
  CHECK(expr("x[n:]") == "(subscript (name x) (slice (name n) _))");
  CHECK(expr("x[i,]") == "(subscript (name x) (name i))");
  CHECK(
      expr("Q[bz, bx * block_M:(bx + 1) * block_M, by, :]") ==
      "(subscript (name Q) (name bz) (slice (* (name bx) (name block_M)) (* (+ (name bx) (int 1)) "
      "(name block_M))) (name by) (slice _ _))");
  CHECK(expr("-infinity(f32)") == "(neg (call (name infinity) (name f32)))");
  CHECK(expr("f(a)(b)[c].d") ==
        "(attr (subscript (call (call (name f) (name a)) (name b)) (name c)) d)");
}

TEST_CASE("parser: expression errors") {
  CHECK(firstError("const x = a < b < c\n") == "1:17: chained comparisons are not supported");
  CHECK(firstError("const x = f(a=1, b)\n") ==
        "1:18: positional argument follows keyword argument");
  CHECK(firstError("const x = f(a=1, a=2)\n") == "1:18: keyword argument 'a' repeated");
  CHECK(firstError("const x = \n") == "1:11: expected an expression");
  CHECK(firstError("const x = 1 +\n") == "1:14: expected an expression");
  CHECK(firstError("const x = x[1:2:3]\n") == "1:16: slice steps are not supported");
  CHECK(firstError("const x = x[]\n") == "1:13: expected an expression");
  CHECK(firstError("const x = f(a b)\n") == "1:15: expected ',' or ')' in argument list");
  CHECK(firstError("const x = a if b\n") == "1:17: expected 'else' in conditional expression");
  // Like Python, `.1` lexes as a float, so `a.1` is a name followed by a stray literal.
  CHECK(firstError("const x = a.1\n") == "1:12: expected end of line after constant");
  CHECK(firstError("const x = a.(b)\n") == "1:13: expected an attribute name after '.'");
  CHECK(firstError("const x = {a}\n") == "1:13: expected ':' after dictionary key");
  CHECK(firstError("const x = f(*a)\n") == "1:13: argument unpacking is not supported");
}

TEST_CASE("parser: top level") {
  CHECK(dump("import std.activations\nimport a as b, c\n") ==
        "(import std.activations)\n(import a as b)\n(import c)\n");
  CHECK(dump("from std.activations import gelu, silu as swish\n") ==
        "(from std.activations import gelu (silu as swish))\n");
  CHECK(dump("from m import (a,\n    b as c,\n)\n") == "(from m import a (b as c))\n");
  CHECK(dump("const block_M = 128\nconst shape = 1, 2\n") ==
        "(const block_M (int 128))\n(const shape (tuple (int 1) (int 2)))\n");
  CHECK(dump("@kernel\ndef k(A: Tensor((M, K), dtype), n: int32, x):\n    pass\n") ==
        "(def k @kernel (params A:(call (name Tensor) (tuple (name M) (name K)) (name dtype)) "
        "n:(name int32) x)\n  (pass))\n");
  CHECK(dump("@kernel(name=\"gemm\")\n@T.macro\ndef k(\n    a,\n    b,\n):\n    pass\n") ==
        "(def k @(kernel (kw name (str \"gemm\"))) @T.macro (params a b)\n  (pass))\n");
  CHECK(dump("def f() -> None:\n    return x\n") == "(def f (params)\n  (return (name x)))\n");
  CHECK(dump("def f(): return\n") == "(def f (params)\n  (return))\n");
}

TEST_CASE("parser: top level errors") {
  CHECK(firstError("x + 1\n") == "1:1: expected 'def', 'const', 'import', 'from' or 'NAME = value' "
                                 "at top level");
  CHECK(firstError("x\n") == "1:1: expected 'def', 'const', 'import', 'from' or 'NAME = value' at "
                             "top level");
  CHECK(dump("x = 1\n") == dump("const x = 1\n"));
  CHECK(firstError("const = 1\n") == "1:7: expected a constant name after 'const'");
  CHECK(firstError("const x 1\n") == "1:9: expected '=' after constant name");
  CHECK(firstError("from a import *\n") == "1:15: wildcard imports are not supported");
  CHECK(firstError("from . import a\n") == "1:6: relative imports are not supported");
  CHECK(firstError("from a import\n") == "1:14: expected a name to import");
  CHECK(firstError("from a gelu\n") == "1:8: expected 'import' after module name");
  CHECK(firstError("import\n") == "1:7: expected a module name after 'import'");
  CHECK(firstError("@kernel\nconst x = 1\n") == "2:1: expected 'def' after decorator");
  CHECK(firstError("@\ndef f():\n  pass\n") == "1:2: expected a decorator name after '@'");
  CHECK(firstError("def (a):\n  pass\n") == "1:5: expected a function name after 'def'");
  CHECK(firstError("def f a:\n  pass\n") == "1:7: expected '(' after function name");
  CHECK(firstError("def f(a b):\n  pass\n") == "1:9: expected ',' or ')' in parameter list");
  CHECK(firstError("def f(1):\n  pass\n") == "1:7: expected a parameter name");
  CHECK(firstError("def f(a=1):\n  pass\n") == "1:8: default parameter values are not supported");
  CHECK(firstError("def f()\n  pass\n") == "1:8: expected ':' after function signature");
  CHECK(firstError("def f():\npass\n") == "2:1: expected indented block");
  CHECK(firstError("def f():\n") == "2:1: expected indented block");
  CHECK(firstError("const a = 1\n  const b = 2\n") == "2:3: unexpected indent");
}

TEST_CASE("parser: statements") {
  CHECK(body("x = 1") == "(assign (name x) (int 1))");
  CHECK(body("a, b = f()") == "(assign (tuple (name a) (name b)) (call (name f)))");
  CHECK(body("(a, b) = c, d") == "(assign (tuple (name a) (name b)) (tuple (name c) (name d)))");
  CHECK(body("A[i, j] = 0") == "(assign (subscript (name A) (name i) (name j)) (int 0))");
  CHECK(body("x += 1\nx -= 1\nx *= 2\nx /= 2\nx //= 2\nx %= 2\nx **= 2") ==
        "(augassign += (name x) (int 1))\n(augassign -= (name x) (int 1))\n"
        "(augassign *= (name x) (int 2))\n(augassign /= (name x) (int 2))\n"
        "(augassign //= (name x) (int 2))\n(augassign %= (name x) (int 2))\n"
        "(augassign **= (name x) (int 2))");
  CHECK(body("acc[i] += O[b, s] * w") ==
        "(augassign += (subscript (name acc) (name i)) (* (subscript (name O) (name b) (name s)) "
        "(name w)))");
  CHECK(body("clear(C)") == "(expr (call (name clear) (name C)))");
  CHECK(body("pass") == "(pass)");
  CHECK(body("return a, b") == "(return (tuple (name a) (name b)))");
  CHECK(body("for i, j in Parallel(M, N):\n    x[i, j] = 0") ==
        "(for (i j) (call (name Parallel) (name M) (name N))\n  (assign (subscript (name x) "
        "(name i) (name j)) (int 0)))");
  CHECK(body("for (i, j) in T.Parallel(M, N):\n    pass") ==
        "(for (i j) (call (attr (name T) Parallel) (name M) (name N))\n  (pass))");
  CHECK(body("for k in range(0, n, 2): pass") ==
        "(for (k) (call (name range) (int 0) (name n) (int 2))\n  (pass))");
  CHECK(body("with Kernel(a, threads=128) as (bx, by):\n    pass") ==
        "(with (call (name Kernel) (name a) (kw threads (int 128))) as (bx by)\n  (pass))");
  CHECK(body("with Kernel(a) as bx:\n    pass") ==
        "(with (call (name Kernel) (name a)) as (bx)\n  (pass))");
  CHECK(body("with Kernel(a, b) as bx, by:\n    pass") ==
        "(with (call (name Kernel) (name a) (name b)) as (bx by)\n  (pass))");
  CHECK(body("with Kernel(a):\n    pass") == "(with (call (name Kernel) (name a))\n  (pass))");
}

TEST_CASE("parser: if / elif / else") {
  CHECK(body("if a:\n    x = 1") == "(if (name a)\n  (assign (name x) (int 1)))");
  CHECK(body("if a:\n    pass\nelse:\n    x = 2") ==
        "(if (name a)\n  (pass)\nelse\n  (assign (name x) (int 2)))");
  CHECK(body("if a:\n    pass\nelif b:\n    x = 1\nelif c: y = 2\nelse:\n    z = 3") ==
        "(if (name a)\n  (pass)\nelse\n  (if (name b)\n    (assign (name x) (int 1))\n  else\n"
        "    (if (name c)\n      (assign (name y) (int 2))\n    else\n      (assign (name z) "
        "(int 3)))))");
  // Nested blocks close back to the right level.
  CHECK(body("for i in a:\n    if i:\n        pass\n    x = 1\ny = 2") ==
        "(for (i) (name a)\n  (if (name i)\n    (pass))\n  (assign (name x) (int 1)))\n"
        "(assign (name y) (int 2))");
  Parsed p = parse("def f():\n    if a:\n        pass\n    elif b:\n        pass\n    else:\n"
                   "        pass\n    x = 1\n");
  REQUIRE(p.module);
  const auto &f = std::get<ast::FuncDef>(p.module->items[0]);
  REQUIRE(f.body.size() == 2);
  const auto &outer = std::get<ast::If>(f.body[0]->node);
  REQUIRE(outer.orelse.size() == 1);
  const auto &inner = std::get<ast::If>(outer.orelse[0]->node);
  CHECK(inner.orelse.size() == 1);
  CHECK(f.body[0]->range.begin.line == 2);
  CHECK(f.body[0]->range.end.line == 7);
  CHECK(outer.orelse[0]->range.begin.line == 4);
  CHECK(outer.orelse[0]->range.begin.col == 5);
}

TEST_CASE("parser: statement errors") {
  CHECK(bodyError("for i in range(10)\n    pass") == "2:23: expected ':' after for header");
  CHECK(bodyError("for i range(10):\n    pass") == "2:11: expected 'in' after loop variables");
  CHECK(bodyError("for 1 in a:\n    pass") == "2:9: expected a loop variable name");
  CHECK(bodyError("with K() as 1:\n    pass") == "2:17: expected a name after 'as'");
  CHECK(bodyError("with K() as a\n    pass") == "2:18: expected ':' after with header");
  CHECK(bodyError("if a\n    pass") == "2:9: expected ':' after if condition");
  CHECK(bodyError("if a:\npass") == "3:5: expected indented block");
  CHECK(bodyError("x = 1\n    y = 2") == "3:9: unexpected indent");
  CHECK(bodyError("f() = 1") == "2:5: invalid assignment target");
  CHECK(bodyError("a + b = 1") == "2:5: invalid assignment target");
  CHECK(bodyError("a, f() = 1") == "2:8: invalid assignment target");
  CHECK(bodyError("x.y = 1") == "2:5: invalid assignment target");
  CHECK(bodyError("x.y += 1") == "2:5: invalid assignment target");
  CHECK(bodyError("a, b += 1") == "2:5: invalid assignment target");
  CHECK(bodyError("1 = x") == "2:5: invalid assignment target");
  CHECK(bodyError("a = b = 1") == "2:11: chained assignment is not supported");
  CHECK(bodyError("x = 1 2") == "2:11: expected end of line after statement");
  CHECK(bodyError("else:\n    pass") == "2:5: 'else' without a matching 'if'");
  CHECK(bodyError("def g():\n    pass") == "2:5: 'def' is only allowed at the top level");
  CHECK(bodyError("import m") == "2:5: 'import' is only allowed at the top level");
}

TEST_CASE("parser: error recovery reports several errors") {
  std::vector<std::string> e = errors("const a = \n"
                                      "const b = 1\n"
                                      "def f():\n"
                                      "    x = (1 + )\n"
                                      "    y = 2\n"
                                      "    for i in range(3)\n"
                                      "        z = i +\n"
                                      "    w = a < b < c\n"
                                      "    ok = 1\n"
                                      "def g(:):\n"
                                      "    pass\n"
                                      "const c = 1 $\n");
  INFO(fmt::format("{}", fmt::join(e, "\n")));
  REQUIRE(e.size() == 6);
  CHECK(e[0] == "1:11: expected an expression");
  CHECK(e[1] == "4:14: expected an expression");
  CHECK(e[2] == "6:22: expected ':' after for header");
  CHECK(e[3] == "8:15: chained comparisons are not supported");
  CHECK(e[4] == "10:7: expected a parameter name");
  CHECK(e[5] == "12:13: unexpected character '$'");
  // An unclosed bracket swallows the rest of the file, as in Python; the error points at it.
  e = errors("def f():\n    x = (1 + 2\n    y = g(3)\n    z = 4\n");
  REQUIRE(e.size() == 2);
  CHECK(e[0] == "3:5: expected ',' or ')' in parenthesised expression");
  CHECK(e[1] == "2:9: '(' was never closed");
  // Lexical and syntax errors mix; each bad statement is reported once.
  e = errors("def f():\n    x = 1 +\n    y = ?\n    z = 3 $\n");
  CHECK(e.size() == 4);
  // Rendering has file:line:col and a caret.
  Parsed p = parse("def f():\n    x = 1 +\n");
  CHECK(p.rendered == "test.tile:2:12: error: expected an expression\n    x = 1 +\n           ^\n");
}

TEST_CASE("parser: nesting limits") {
  CHECK(parse("const x = " + repeat("(", 150) + "1" + repeat(")", 150) + "\n").errors.empty());
  CHECK(firstError("const x = " + repeat("(", 250) + "1" + repeat(")", 250) + "\n")
            .ends_with("nesting too deep (limit 200)"));
  // Unclosed deep brackets: one nesting error, one unclosed-bracket error, no crash.
  CHECK(errors("const x = " + repeat("[", 100000) + "\n").size() == 2);
  CHECK(firstError("const x = " + repeat("-", 1000) + "1\n")
            .ends_with("nesting too deep (limit 200)"));
  CHECK(firstError("const x = " + repeat("not ", 1000) + "1\n")
            .ends_with("nesting too deep (limit 200)"));
  CHECK(firstError("const x = 1" + repeat(" ** 1", 1000) + "\n")
            .ends_with("nesting too deep (limit 200)"));
  CHECK(firstError("const x = 1" + repeat(" if a else 1", 1000) + "\n")
            .ends_with("nesting too deep (limit 200)"));
  CHECK(firstError("const x = f" + repeat("(1)", 1000) + "\n")
            .ends_with("nesting too deep (limit 200)"));
  CHECK(firstError("const x = a" + repeat(".b", 1000) + "\n")
            .ends_with("nesting too deep (limit 200)"));
  // Operator chains build deep trees too; a long one is limited, a reasonable one is fine.
  CHECK(parse("const x = 1" + repeat(" + 1", 150) + "\n").errors.empty());
  CHECK(firstError("const x = 1" + repeat(" + 1", 100000) + "\n")
            .ends_with("nesting too deep (limit 200)"));
  CHECK(firstError("const x = 1" + repeat(" * 1", 1000) + "\n")
            .ends_with("nesting too deep (limit 200)"));
  CHECK(firstError("const x = a" + repeat(" and a", 1000) + "\n")
            .ends_with("nesting too deep (limit 200)"));
  // Wide is fine: long argument lists and blocks are not deep.
  CHECK(parse("const x = f(" + repeat("1, ", 100000) + ")\n").errors.empty());
  CHECK(parse("def f():\n" + repeat("    x = 1\n", 50000)).errors.empty());

  std::string deep = "def f():\n";
  for (int i = 1; i <= 300; ++i)
    deep += std::string(size_t(i) * 2, ' ') + "if a:\n";
  deep += std::string(602, ' ') + "pass\n";
  CHECK(firstError(deep).ends_with("nesting too deep (limit 200)"));
  std::string elifs =
      "def f():\n    if a:\n        pass\n" + repeat("    elif a:\n        pass\n", 1000);
  CHECK(firstError(elifs).ends_with("nesting too deep (limit 200)"));
  std::string someElifs =
      "def f():\n    if a:\n        pass\n" + repeat("    elif a:\n        pass\n", 100);
  CHECK(parse(someElifs).errors.empty());
}

TEST_CASE("parser: size limits") {
  Parsed p = parse(std::string((size_t{16} << 20) + 1, ' '));
  REQUIRE(p.errors.size() == 1);
  CHECK(p.errors[0].find("source file is too large") != std::string::npos);
  // A long line is fine.
  CHECK(parse("const x = [" + repeat("1, ", 40000) + "]\n").errors.empty());
  // Huge garbage stops at the error limit instead of churning.
  p = parse(std::string(4 << 20, '$'));
  CHECK(!p.module);
  CHECK(p.errors.size() == DiagnosticEngine::kMaxErrors);
}

namespace {

std::vector<std::pair<std::string, std::string>> conformanceFiles() {
  std::vector<std::pair<std::string, std::string>> files;
  std::filesystem::path dir(TILEC_CONFORMANCE_DIR);
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    return files;
  for (const auto &entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".tile")
      continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    files.emplace_back(entry.path().filename().string(), ss.str());
  }
  std::sort(files.begin(), files.end());
  return files;
}

} // namespace

TEST_CASE("parser: conformance programs parse") {
  auto files = conformanceFiles();
  if (files.empty()) {
    MESSAGE("conformance folder " TILEC_CONFORMANCE_DIR " not found; skipping");
    return;
  }
  for (const auto &[name, text] : files) {
    INFO(name);
    Parsed p = parse(text);
    CHECK_MESSAGE(p.errors.empty(), p.rendered);
    REQUIRE(p.module);
    bool hasKernel = false;
    for (const ast::TopLevel &item : p.module->items)
      if (const auto *f = std::get_if<ast::FuncDef>(&item))
        hasKernel |= !f->decorators.empty() && f->decorators[0].name == "kernel";
    CHECK(hasKernel);
    // The dump is deterministic.
    CHECK(printAST(*p.module) == printAST(*parse(text).module));
  }
}

TEST_CASE("parser: garbage never crashes") {
  auto files = conformanceFiles();
  std::vector<std::string> seeds;
  for (auto &f : files)
    seeds.push_back(f.second);
  seeds.push_back("@kernel\ndef f(A: Tensor((M,), f32)):\n    with Kernel(1) as bx:\n"
                  "        for i in Parallel(4):\n            A[i] = A[i] * 2 if i else -1.5\n");
  const std::string pieces[] = {"(",       ")",  "[",    "]", "{",  "}",    ":",   "\n",
                                "    ",    "\t", "\\\n", "'", "\"", "#",    "if ", "else",
                                "elif a:", "=",  "**",   ",", "@",  "def ", "λ",   "\xff",
                                "0x",      "1e", "_",    ".", "\r", " for "};
  std::mt19937 rng(12345);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int withErrors = 0;
  for (int iter = 0; iter < 400; ++iter) {
    std::string s = seeds[pick(seeds.size())];
    int edits = 1 + int(pick(8));
    for (int e = 0; e < edits && !s.empty(); ++e) {
      size_t at = pick(s.size());
      switch (pick(5)) {
      case 0:
        s.erase(at, 1 + pick(20));
        break;
      case 1:
        s.insert(at, pieces[pick(std::size(pieces))]);
        break;
      case 2:
        s[at] = char(pick(256));
        break;
      case 3:
        s.resize(at);
        break;
      default: {
        size_t from = pick(s.size());
        s.insert(at, s.substr(from, pick(60)));
        break;
      }
      }
    }
    Parsed p = parse(s);
    if (p.module)
      (void)printAST(*p.module);
    else
      ++withErrors;
  }
  CHECK(withErrors > 100);
  for (int iter = 0; iter < 100; ++iter) {
    std::string s(pick(2000), '\0');
    for (char &c : s)
      c = char(pick(256));
    (void)parse(s);
  }
}
