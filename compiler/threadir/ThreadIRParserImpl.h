// The thread-IR parser, private to threadir/: ThreadIRParser.cpp drives it, ParseStatements.cpp
// (module, kernels, statements) and ParseExpressions.cpp hold its member functions.
#pragma once

#include "support/Diagnostics.h"
#include "threadir/ThreadIR.h"
#include "threadir/ThreadIRLexer.h"
#include "threadir/ThreadIRParser.h"
#include "threadir/ThreadIRVerifier.h"

#include <fmt/format.h>

#include <map>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tilec::thir::detail {

// Thrown after the error is reported, to unwind the recursive descent; parseThreadIR catches it.
struct ParseFailed {};

class Parser {
public:
  Parser(std::string_view text, uint32_t file, DiagnosticEngine &diags)
      : lex_(text, file), diags_(diags) {}

  Module module() {
    advance();
    skipNewlines();
    expectIdent("module");
    Module m;
    m.name = name("a module name");
    endOfLine();
    for (;;) {
      skipNewlines();
      if (cur_.kind == TokKind::End)
        return m;
      if (!cur_.isIdent("kernel"))
        error(cur_.loc, fmt::format("expected 'kernel' but found {}", describe(cur_)));
      kernelLocs_.push_back(cur_.loc);
      m.kernels.push_back(kernel());
    }
  }

  /// Records where each kernel, parameter and statement of `m` (the module() just returned,
  /// at its final address) was written.
  void index(const Module &m) {
    size_t next = 0;
    for (size_t i = 0; i < m.kernels.size() && i < kernelLocs_.size(); ++i) {
      const Kernel &k = m.kernels[i];
      locs_[&k] = kernelLocs_[i];
      for (size_t j = 0; j < k.params.size() && j < paramLocs_[i].size(); ++j)
        locs_[&k.params[j]] = paramLocs_[i][j];
      indexBody(k.body, next);
    }
  }

  SourceLoc locate(const void *p) const {
    auto it = locs_.find(p);
    return it == locs_.end() ? SourceLoc{} : it->second;
  }

private:
  // ---- Tokens ----------------------------------------------------------------------------
  [[noreturn]] void error(SourceLoc loc, std::string message) {
    diags_.error(loc, std::move(message));
    throw ParseFailed{};
  }
  void advance() {
    cur_ = lex_.next();
    if (cur_.kind == TokKind::Error)
      error(cur_.loc, cur_.text);
  }
  bool accept(std::string_view punct) {
    if (!cur_.isPunct(punct))
      return false;
    advance();
    return true;
  }
  void expectPunct(std::string_view p) {
    if (!cur_.isPunct(p))
      error(cur_.loc, fmt::format("expected '{}' but found {}", p, describe(cur_)));
    advance();
  }
  void expectIdent(std::string_view word) {
    if (!cur_.isIdent(word))
      error(cur_.loc, fmt::format("expected '{}' but found {}", word, describe(cur_)));
    advance();
  }
  void skipNewlines() {
    while (cur_.kind == TokKind::Newline)
      advance();
  }
  void endOfLine() {
    if (cur_.kind != TokKind::Newline && cur_.kind != TokKind::End)
      error(cur_.loc, fmt::format("expected the end of the line but found {}", describe(cur_)));
    skipNewlines();
  }
  // A statement ends at its line's end or at the '}' closing its body (`if c { barrier }`).
  void endOfStatement() {
    if (!cur_.isPunct("}"))
      endOfLine();
  }
  std::string name(std::string_view what) {
    if (cur_.kind != TokKind::Ident && cur_.kind != TokKind::String)
      error(cur_.loc, fmt::format("expected {} but found {}", what, describe(cur_)));
    std::string n = cur_.text;
    advance();
    return n;
  }

  /// An integer literal, optionally negative, within [lo, hi].
  int64_t integer(int64_t lo, int64_t hi, std::string_view what) {
    SourceLoc loc = cur_.loc;
    bool negative = accept("-");
    if (cur_.kind != TokKind::Int)
      error(cur_.loc, fmt::format("expected {} but found {}", what, describe(cur_)));
    auto magnitude = unsignedValue(cur_.text);
    constexpr uint64_t kMaxMagnitude = uint64_t{1} << 63;
    if (!magnitude || *magnitude > kMaxMagnitude - (negative ? 0 : 1))
      error(loc, "integer literal out of range");
    int64_t v = negative ? static_cast<int64_t>(0 - *magnitude) : static_cast<int64_t>(*magnitude);
    if (v < lo || v > hi)
      error(loc, fmt::format("{} must be in {}..{}", what, lo, hi));
    advance();
    return v;
  }
  int smallInt(std::string_view what) { return static_cast<int>(integer(0, INT_MAX, what)); }

  Type type() {
    if (cur_.kind != TokKind::Ident)
      error(cur_.loc, fmt::format("expected a type but found {}", describe(cur_)));
    auto t = typeNamed(cur_.text);
    if (!t)
      error(cur_.loc, fmt::format("unknown type '{}' (a dtype, optionally with x and 1 to {} "
                                  "lanes: float32x4)",
                                  cur_.text, kMaxLanes));
    advance();
    return *t;
  }
  DType dtype() {
    SourceLoc loc = cur_.loc;
    Type t = type();
    if (t.lanes != 1)
      error(loc, fmt::format("expected a scalar type, not {}", typeString(t)));
    return t.elem;
  }
  Type typeArgument() {
    expectPunct("<");
    Type t = type();
    expectPunct(">");
    return t;
  }

  // ---- Nesting ---------------------------------------------------------------------------
  class DepthGuard {
  public:
    DepthGuard(Parser &p, SourceLoc loc) : p_(p) {
      if (++p_.depth_ > kMaxParseDepth)
        p_.error(loc, fmt::format("nesting deeper than {} levels", kMaxParseDepth));
    }
    ~DepthGuard() { --p_.depth_; }
    DepthGuard(const DepthGuard &) = delete;
    DepthGuard &operator=(const DepthGuard &) = delete;

  private:
    Parser &p_;
  };

  // ---- Module structure ------------------------------------------------------------------
  Kernel kernel();

  int intField(std::string_view field);

  Param param();

  // tensor_map<%A, dims (e, ...), strides (e, ...), box (n, ...), swizzle n>
  TensorMapInfo tensorMap();

  int paramIndex();

  // ---- Statements ------------------------------------------------------------------------
  Body body();

  void indexBody(const Body &b, size_t &next);

  int varName();

  void statement(Body &b);

  void let();

  Stmt statementOp(const std::string &word);

  Stmt ifStatement();

  /// `sync BARRIER, THREADS` after `if COND` or `else`.
  std::optional<SyncGroup> syncGroup();

  Stmt forStatement();

  /// `%A[index]`
  std::pair<int, Expr> element();
  /// `smem[offset]` (the word already consumed unless `withWord`).
  /// `smem[offset]`, or with a region where `region` is given: `smem[offset; begin, end]`.
  Expr sharedOffset(bool withWord = true, std::optional<SmemRegion> *region = nullptr);
  /// `begin, end` of a shared region (after its `;`).
  SmemRegion regionBounds();

  // ---- Expressions -----------------------------------------------------------------------
  Expr make(SourceLoc loc, Type t, decltype(Node::op) op);

  Expr expr();

  Expr primary();

  Expr literal(SourceLoc loc, bool negative);

  // `nan` or `nan(0xBITS)`.
  double nan();

  Expr parenthesized(SourceLoc loc);

  Expr binary(SourceLoc loc, BinOp op, Expr a, Expr b);

  std::vector<Expr> arguments(size_t n);

  Expr named(SourceLoc loc);

  // ldmatrix.x4.trans(smem[o]), mma.m16n8k16.float16(a, b, c), wgmma.m64n128k16.float16...(...)
  Expr dotted(SourceLoc loc, const std::string &word);

  template <class BadForm>
  Expr wgmma(SourceLoc loc, const std::vector<std::string_view> &parts, BadForm &badForm);

  Lexer lex_;
  DiagnosticEngine &diags_;
  Token cur_;
  int depth_ = 0;
  const std::vector<Param> *params_ = nullptr; // the current kernel's
  std::map<int, Type> vars_;                   // declared so far in the current kernel
  std::map<uint64_t, Expr> lets_;              // bound for the next statement
  SourceLoc firstLet_;
  std::unordered_map<const Node *, int> depths_;
  std::unordered_map<const void *, SourceLoc> locs_;
  std::vector<SourceLoc> kernelLocs_;
  std::vector<std::vector<SourceLoc>> paramLocs_;
  std::vector<SourceLoc> stmtLocs_; // in pre-order
};

} // namespace tilec::thir::detail
