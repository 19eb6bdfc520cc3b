#include "threadir/ThreadIRParser.h"

#include "threadir/ThreadIRLexer.h"
#include "threadir/ThreadIRNames.h"
#include "threadir/ThreadIRText.h"
#include "threadir/ThreadIRVerifier.h"

#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <climits>
#include <cmath>
#include <limits>
#include <map>
#include <unordered_map>

namespace tilec::thir {

namespace {

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
  Kernel kernel() {
    advance(); // 'kernel'
    Kernel k;
    k.name = name("a kernel name");
    params_ = &k.params;
    vars_.clear();
    paramLocs_.emplace_back();
    expectPunct("(");
    if (!cur_.isPunct(")")) {
      do {
        paramLocs_.back().push_back(cur_.loc);
        k.params.push_back(param());
      } while (accept(","));
    }
    expectPunct(")");
    k.threads = intField("threads");
    expectIdent("grid");
    expectPunct("=");
    expectPunct("(");
    for (size_t i = 0; i < k.grid.size(); ++i) {
      if (i)
        expectPunct(",");
      if (cur_.isIdent("none"))
        advance();
      else
        k.grid[i] = expr();
    }
    expectPunct(")");
    k.dynamicSharedBytes = intField("dynamic_smem");
    if (cur_.isIdent("blocks_per_sm"))
      k.minBlocksPerSM = intField("blocks_per_sm");
    if (cur_.isIdent("persistent"))
      k.persistentBlocksPerSM = intField("persistent");
    if (cur_.isIdent("checks")) {
      advance();
      expectPunct("=");
      expectPunct("(");
      do {
        DimCheck c;
        c.value = expr();
        if (cur_.kind != TokKind::String)
          error(cur_.loc, fmt::format("expected the name of a checked dimension (a string) but "
                                      "found {}",
                                      describe(cur_)));
        c.what = cur_.text;
        advance();
        k.dimChecks.push_back(std::move(c));
      } while (accept(","));
      expectPunct(")");
    }
    expectPunct("{");
    k.body = body();
    expectPunct("}");
    endOfLine();
    return k;
  }

  int intField(std::string_view field) {
    expectIdent(field);
    expectPunct("=");
    return smallInt(fmt::format("the value of {}", field));
  }

  Param param() {
    if (cur_.kind != TokKind::Param)
      error(cur_.loc, fmt::format("expected a parameter (%name) but found {}", describe(cur_)));
    Param p{cur_.text, ParamKind::Scalar, DType::Int32, 0, {}};
    advance();
    expectPunct(":");
    if (cur_.isIdent("tensor")) {
      advance();
      p.kind = ParamKind::Tensor;
      expectPunct("<");
      p.dtype = dtype();
      expectPunct(",");
      expectIdent("align");
      p.alignBytes = smallInt("an alignment");
      expectPunct(">");
      return p;
    }
    if (cur_.isIdent("tensor_map")) {
      advance();
      p.kind = ParamKind::TensorMap;
      p.alignBytes = 0;
      p.map = tensorMap();
      p.dtype = (*params_)[p.map.tensor].dtype;
      return p;
    }
    if (cur_.isIdent("tma_enabled")) {
      advance();
      p.kind = ParamKind::TmaEnabled;
      if (cur_.isPunct("<"))
        p.dtype = typeArgument().elem;
    } else if (cur_.isIdent("dim")) {
      advance();
      p.kind = ParamKind::Dim;
      p.dtype = DType::Int64;
      if (cur_.isPunct("<"))
        p.dtype = typeArgument().elem;
    } else {
      p.dtype = dtype();
    }
    if (cur_.isIdent("align")) {
      advance();
      p.alignBytes = smallInt("an alignment");
    }
    return p;
  }

  // tensor_map<%A, dims (e, ...), strides (e, ...), box (n, ...), swizzle n>
  TensorMapInfo tensorMap() {
    TensorMapInfo m;
    expectPunct("<");
    SourceLoc at = cur_.loc;
    m.tensor = paramIndex();
    if ((*params_)[m.tensor].kind != ParamKind::Tensor)
      error(at, "a tensor map describes a tensor parameter");
    auto list = [&](std::string_view field, auto item) {
      expectPunct(",");
      expectIdent(field);
      expectPunct("(");
      if (!cur_.isPunct(")")) {
        do
          item();
        while (accept(","));
      }
      expectPunct(")");
    };
    list("dims", [&] { m.dims.push_back(expr()); });
    list("strides", [&] { m.strides.push_back(expr()); });
    list("box", [&] { m.box.push_back(smallInt("a box extent")); });
    expectPunct(",");
    expectIdent("swizzle");
    m.swizzleBytes = smallInt("the swizzle width in bytes");
    expectPunct(">");
    return m;
  }

  int paramIndex() {
    if (cur_.kind != TokKind::Param)
      error(cur_.loc, fmt::format("expected a parameter (%name) but found {}", describe(cur_)));
    for (size_t i = 0; i < params_->size(); ++i)
      if ((*params_)[i].name == cur_.text) {
        advance();
        return static_cast<int>(i);
      }
    error(cur_.loc, fmt::format("unknown parameter '%{}'", cur_.text));
  }

  // ---- Statements ------------------------------------------------------------------------
  Body body() {
    DepthGuard guard(*this, cur_.loc);
    Body b;
    for (;;) {
      skipNewlines();
      if (cur_.isPunct("}") || cur_.kind == TokKind::End)
        break;
      statement(b);
    }
    if (!lets_.empty())
      error(firstLet_, "'let' must be followed by the statement that uses it");
    return b;
  }

  void indexBody(const Body &b, size_t &next) {
    for (const Stmt &s : b) {
      if (next < stmtLocs_.size())
        locs_[&s] = stmtLocs_[next++];
      if (const auto *i = std::get_if<IfStmt>(&s.op)) {
        indexBody(i->then, next);
        indexBody(i->otherwise, next);
      } else if (const auto *f = std::get_if<ForStmt>(&s.op)) {
        indexBody(f->body, next);
      }
    }
  }

  int varName() {
    auto id = cur_.kind == TokKind::Ident ? varId(cur_.text) : std::nullopt;
    if (!id)
      error(cur_.loc,
            fmt::format("expected a variable (v0, v1, ...) but found {}", describe(cur_)));
    advance();
    return *id;
  }

  void statement(Body &b) {
    SourceLoc loc = cur_.loc;
    if (cur_.kind != TokKind::Ident)
      error(loc, fmt::format("expected a statement but found {}", describe(cur_)));
    std::string word = cur_.text;
    if (word == "let")
      return let();
    stmtLocs_.push_back(loc);
    Stmt s = statementOp(word);
    lets_.clear();
    b.push_back(std::move(s));
  }

  void let() {
    SourceLoc loc = cur_.loc;
    advance();
    if (cur_.kind != TokKind::Temp)
      error(cur_.loc,
            fmt::format("expected a temporary ($0, $1, ...) but found {}", describe(cur_)));
    auto id = unsignedValue(cur_.text);
    if (!id || *id > INT_MAX)
      error(cur_.loc, "temporary number out of range");
    SourceLoc idLoc = cur_.loc;
    advance();
    expectPunct("=");
    Expr e = expr();
    endOfLine();
    if (lets_.count(*id))
      error(idLoc, fmt::format("${} is already bound", *id));
    if (lets_.empty())
      firstLet_ = loc;
    lets_.emplace(*id, std::move(e));
  }

  Stmt statementOp(const std::string &word) {
    if (word == "var") {
      advance();
      int id = varName();
      expectPunct(":");
      Type t = type();
      expectPunct("=");
      Expr init = expr();
      endOfStatement();
      vars_.emplace(id, t);
      return {DeclVar{id, t, init}};
    }
    if (auto id = varId(word)) {
      advance();
      expectPunct("=");
      Expr value = expr();
      endOfStatement();
      return {AssignVar{*id, value}};
    }
    if (word == "store") {
      advance();
      auto [param, index] = element();
      expectPunct("=");
      Expr value = expr();
      expectPunct(",");
      expectIdent("align");
      int align = smallInt("an alignment");
      endOfStatement();
      return {GlobalStore{param, index, value, align}};
    }
    if (auto op = word.rfind("atomic_", 0) == 0 ? atomicOpByName(word.substr(7)) : std::nullopt) {
      advance();
      // `+=` for add, `max=` (a name, then `=`) for the others.
      auto update = [&] {
        if (*op == AtomicOp::Add) {
          expectPunct("+=");
        } else {
          expectIdent(atomicOpName(*op));
          expectPunct("=");
        }
        Expr value = expr();
        endOfStatement();
        return value;
      };
      if (cur_.isIdent("smem")) {
        std::optional<SmemRegion> region;
        Expr offset = sharedOffset(true, &region);
        Expr value = update();
        return {SharedAtomic{offset, value, *op, region}};
      }
      auto [param, index] = element();
      Expr value = update();
      return {GlobalAtomic{param, index, value, *op}};
    }
    if (word == "cp.async") {
      advance();
      Expr offset = sharedOffset();
      expectPunct("<-");
      auto [param, index] = element();
      expectPunct(",");
      integer(16, 16, "the copy size in bytes (16)");
      expectIdent("bytes");
      Expr srcBytes;
      if (accept(",")) {
        expectIdent("reading");
        srcBytes = expr();
      }
      endOfStatement();
      return {CpAsync{param, index, offset, srcBytes}};
    }
    if (word == "barrier") {
      advance();
      Barrier b;
      if (cur_.kind != TokKind::Newline && cur_.kind != TokKind::End && !cur_.isPunct("}")) {
        b.id = smallInt("a barrier id");
        expectPunct(",");
        b.threads = smallInt("a thread count");
      }
      endOfStatement();
      return {b};
    }
    if (word == "mbarrier.init" || word == "mbarrier.arrive" ||
        word == "mbarrier.arrive.expect_tx" || word == "mbarrier.wait") {
      advance();
      Expr bar = sharedOffset();
      Expr operand;
      if (word != "mbarrier.arrive") {
        expectPunct(",");
        operand = expr();
      }
      endOfStatement();
      if (word == "mbarrier.init")
        return {MbarrierInit{bar, operand}};
      if (word == "mbarrier.wait")
        return {MbarrierWait{bar, operand}};
      return {MbarrierArrive{bar, operand}};
    }
    if (word == "tma.load") {
      advance();
      TmaLoad t;
      t.byteOffset = sharedOffset();
      expectPunct("<-");
      t.map = paramIndex();
      expectPunct("[");
      do
        t.coords.push_back(expr());
      while (accept(","));
      expectPunct("]");
      expectPunct(",");
      expectIdent("mbarrier");
      t.barOffset = sharedOffset();
      endOfStatement();
      return {std::move(t)};
    }
    if (word == "setmaxnreg.inc" || word == "setmaxnreg.dec") {
      advance();
      int regs = smallInt("a register count");
      endOfStatement();
      return {SetMaxNReg{word == "setmaxnreg.inc", regs}};
    }
    if (word == "turn.wait" || word == "turn.pass") {
      advance();
      WarpgroupTurn t;
      t.barrier = smallInt("a barrier id");
      t.pass = word == "turn.pass";
      endOfStatement();
      return {t};
    }
    if (word == "wgmma.wait") {
      advance();
      WgmmaWait w;
      w.pending = smallInt("the number of pending groups");
      expectPunct("(");
      if (!cur_.isPunct(")")) {
        do {
          SourceLoc at = cur_.loc;
          auto id = cur_.kind == TokKind::Ident ? varId(cur_.text) : std::nullopt;
          if (!id)
            error(at, fmt::format("expected a variable but found {}", describe(cur_)));
          advance();
          w.vars.push_back(*id);
        } while (accept(","));
      }
      expectPunct(")");
      endOfStatement();
      return {std::move(w)};
    }
    if (word == "cp.async.commit" || word == "fence.proxy.async.shared" ||
        word == "fence.mbarrier_init" || word == "fence.acq_rel.cta") {
      advance();
      endOfStatement();
      if (word == "fence.mbarrier_init")
        return {FenceMbarrierInit{}};
      if (word == "fence.acq_rel.cta")
        return {FenceCta{}};
      if (word == "cp.async.commit")
        return {CpAsyncCommit{}};
      return {FenceProxyAsync{}};
    }
    if (word == "cp.async.wait") {
      advance();
      int pending = smallInt("the number of pending groups");
      endOfStatement();
      return {CpAsyncWait{pending}};
    }
    if (word == "printf") {
      advance();
      if (cur_.kind != TokKind::String)
        error(cur_.loc, fmt::format("expected a format string but found {}", describe(cur_)));
      Printf p{cur_.text, {}};
      advance();
      while (accept(","))
        p.args.push_back(expr());
      endOfStatement();
      return {std::move(p)};
    }
    if (word == "smem") {
      advance();
      std::optional<SmemRegion> region;
      Expr offset = sharedOffset(false, &region);
      expectPunct("=");
      Expr value = expr();
      bool ahead = false;
      if (cur_.isIdent("ahead")) {
        advance();
        ahead = true;
      }
      endOfStatement();
      return {SharedStore{offset, value, ahead, region}};
    }
    if (word == "if")
      return ifStatement();
    if (word == "for")
      return forStatement();
    error(cur_.loc, fmt::format("unknown statement '{}'", word));
  }

  Stmt ifStatement() {
    advance();
    IfStmt s;
    s.cond = expr();
    lets_.clear();
    s.thenGroup = syncGroup();
    expectPunct("{");
    s.then = body();
    expectPunct("}");
    if (cur_.isIdent("else")) {
      advance();
      s.elseGroup = syncGroup();
      expectPunct("{");
      s.otherwise = body();
      expectPunct("}");
    }
    endOfStatement();
    return {std::move(s)};
  }

  /// `sync BARRIER, THREADS` after `if COND` or `else`.
  std::optional<SyncGroup> syncGroup() {
    if (!cur_.isIdent("sync"))
      return std::nullopt;
    advance();
    SyncGroup g;
    g.barrier = smallInt("a barrier id");
    expectPunct(",");
    g.threads = smallInt("a thread count");
    return g;
  }

  Stmt forStatement() {
    advance();
    ForStmt s;
    s.var = varName();
    expectPunct(":");
    s.varType = type();
    expectIdent("in");
    expectIdent("range");
    expectPunct("(");
    s.begin = expr();
    expectPunct(",");
    s.end = expr();
    expectPunct(",");
    s.step = expr();
    expectPunct(")");
    if (cur_.isIdent("unroll")) {
      advance();
      if (cur_.kind == TokKind::Int)
        s.unrollCount = static_cast<int>(integer(2, 1024, "an unroll count"));
      else
        s.unroll = true;
    }
    lets_.clear();
    vars_.emplace(s.var, s.varType);
    expectPunct("{");
    s.body = body();
    expectPunct("}");
    endOfStatement();
    return {std::move(s)};
  }

  /// `%A[index]`
  std::pair<int, Expr> element() {
    int param = paramIndex();
    expectPunct("[");
    Expr index = expr();
    expectPunct("]");
    return {param, index};
  }
  /// `smem[offset]` (the word already consumed unless `withWord`).
  /// `smem[offset]`, or with a region where `region` is given: `smem[offset; begin, end]`.
  Expr sharedOffset(bool withWord = true, std::optional<SmemRegion> *region = nullptr) {
    if (withWord)
      expectIdent("smem");
    expectPunct("[");
    Expr offset = expr();
    if (region && accept(";"))
      *region = regionBounds();
    expectPunct("]");
    return offset;
  }
  /// `begin, end` of a shared region (after its `;`).
  SmemRegion regionBounds() {
    SmemRegion r;
    r.begin = integer(0, INT32_MAX, "a region's first byte");
    expectPunct(",");
    SourceLoc loc = cur_.loc;
    r.end = integer(0, INT32_MAX, "a region's end");
    if (r.end <= r.begin)
      error(loc, fmt::format("empty region [{}, {})", r.begin, r.end));
    return r;
  }

  // ---- Expressions -----------------------------------------------------------------------
  Expr make(SourceLoc loc, Type t, decltype(Node::op) op) {
    auto e = std::make_shared<const Node>(Node{t, std::move(op)});
    int depth = 0;
    forEachOperand(*e, [&](const Expr &c) { depth = std::max(depth, depths_[c.get()]); });
    if (depth + 1 > kMaxParseDepth)
      error(loc, fmt::format("expression deeper than {} levels", kMaxParseDepth));
    depths_[e.get()] = depth + 1;
    locs_[e.get()] = loc;
    return e;
  }

  Expr expr() {
    DepthGuard guard(*this, cur_.loc);
    Expr e = primary();
    while (cur_.isPunct("[")) {
      SourceLoc loc = cur_.loc;
      advance();
      expectIdent("lane");
      int lane = smallInt("a lane number");
      expectPunct("]");
      e = make(loc, {e->type.elem, 1}, ExtractLane{e, lane});
    }
    return e;
  }

  Expr primary() {
    SourceLoc loc = cur_.loc;
    switch (cur_.kind) {
    case TokKind::Int:
    case TokKind::Float:
      return literal(loc, false);
    case TokKind::Punct:
      if (accept("-"))
        return literal(loc, true);
      if (cur_.isPunct("("))
        return parenthesized(loc);
      break;
    case TokKind::Param: {
      int index = paramIndex();
      const Param &p = (*params_)[index];
      return make(loc, {p.kind == ParamKind::Dim ? DType::Int64 : p.dtype, 1}, ParamRef{index});
    }
    case TokKind::Temp: {
      auto id = unsignedValue(cur_.text);
      auto it = id ? lets_.find(*id) : lets_.end();
      if (it == lets_.end())
        error(loc, fmt::format("${} is not bound (a 'let' is visible only in the statement "
                               "that follows it)",
                               cur_.text));
      advance();
      return it->second;
    }
    case TokKind::Ident:
      return named(loc);
    default:
      break;
    }
    error(loc, fmt::format("expected an expression but found {}", describe(cur_)));
  }

  Expr literal(SourceLoc loc, bool negative) {
    Expr e;
    if (cur_.kind == TokKind::Int) {
      constexpr uint64_t kMaxMagnitude = uint64_t{1} << 63;
      auto magnitude = unsignedValue(cur_.text);
      if (!magnitude || *magnitude > kMaxMagnitude - (negative ? 0 : 1))
        error(loc, "integer literal out of range");
      advance();
      int64_t v =
          negative ? static_cast<int64_t>(0 - *magnitude) : static_cast<int64_t>(*magnitude);
      Type t = accept(":") ? type() : Type{DType::Int64, 1};
      return make(loc, t, ConstInt{v});
    }
    double v = 0;
    if (cur_.kind == TokKind::Float) {
      const std::string &s = cur_.text;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || end != s.data() + s.size())
        error(cur_.loc, "float literal out of range");
      advance();
    } else if (cur_.isIdent("inf")) {
      v = std::numeric_limits<double>::infinity();
      advance();
    } else if (cur_.isIdent("nan")) {
      v = nan();
    } else {
      error(cur_.loc, fmt::format("expected a number but found {}", describe(cur_)));
    }
    if (negative)
      v = -v;
    Type t = accept(":") ? type() : Type{DType::Float32, 1};
    return make(loc, t, ConstFloat{v});
  }

  // `nan` or `nan(0xBITS)`.
  double nan() {
    advance();
    if (!accept("("))
      return text::kCanonicalNaN;
    SourceLoc loc = cur_.loc;
    auto bits = cur_.kind == TokKind::Int ? unsignedValue(cur_.text) : std::nullopt;
    double v = bits ? std::bit_cast<double>(*bits) : 0.0;
    if (!bits || !std::isnan(v))
      error(loc, "expected the bits of a NaN (nan(0x7ff8000000000001))");
    advance();
    expectPunct(")");
    return v;
  }

  Expr parenthesized(SourceLoc loc) {
    advance();
    Expr a = expr();
    if (accept(")"))
      return a;
    SourceLoc opLoc = cur_.loc;
    std::optional<BinOp> op;
    if (cur_.kind == TokKind::Punct || cur_.kind == TokKind::Ident)
      op = names::lookup<BinOp>(names::kBinOpInfix, cur_.text);
    if (!op)
      error(opLoc, fmt::format("expected a binary operator or ')' but found {}", describe(cur_)));
    advance();
    Expr b = expr();
    expectPunct(")");
    return binary(loc, *op, a, b);
  }

  Expr binary(SourceLoc loc, BinOp op, Expr a, Expr b) {
    bool comparison = op >= BinOp::Eq && op <= BinOp::Ge;
    Type t = comparison ? Type{DType::Bool, a->type.lanes} : a->type;
    return make(loc, t, Binary{op, std::move(a), std::move(b)});
  }

  std::vector<Expr> arguments(size_t n) {
    expectPunct("(");
    std::vector<Expr> args;
    for (size_t i = 0; i < n; ++i) {
      if (i)
        expectPunct(",");
      args.push_back(expr());
    }
    expectPunct(")");
    return args;
  }

  Expr named(SourceLoc loc) {
    const std::string word = cur_.text;
    if (auto id = varId(word)) {
      auto it = vars_.find(*id);
      if (it == vars_.end())
        error(loc, fmt::format("v{} used before its declaration", *id));
      advance();
      return make(loc, it->second, VarRef{*id});
    }
    if (auto s = names::lookup<Special>(names::kSpecials, word)) {
      advance();
      return make(loc, {DType::Int32, 1}, SpecialReg{*s});
    }
    if (word == "inf" || word == "nan")
      return literal(loc, false);
    if (auto op = names::lookup<UnOp>(names::kUnOps, word)) {
      advance();
      Expr a = arguments(1)[0];
      Type t = a->type;
      return make(loc, t, Unary{*op, std::move(a)});
    }
    if (auto op = names::lookup<BinOp>(names::kBinOpCalls, word)) {
      advance();
      auto args = arguments(2);
      return binary(loc, *op, args[0], args[1]);
    }
    if (word.find('.') != std::string::npos)
      return dotted(loc, word);
    advance();
    if (word == "select") {
      auto args = arguments(3);
      Type t = args[1]->type;
      return make(loc, t, Select{args[0], args[1], args[2]});
    }
    if (word == "cast" || word == "broadcast" || word == "bitcast") {
      Type t = typeArgument();
      Expr a = arguments(1)[0];
      if (word == "cast")
        return make(loc, t, Cast{a});
      if (word == "broadcast")
        return make(loc, t, Broadcast{a});
      return make(loc, t, Bitcast{a});
    }
    if (word == "vector") {
      Type t = typeArgument();
      expectPunct("(");
      MakeVector v;
      do
        v.elems.push_back(expr());
      while (accept(","));
      expectPunct(")");
      return make(loc, t, std::move(v));
    }
    if (word == "load") {
      Type t = typeArgument();
      expectPunct("(");
      auto [param, index] = element();
      expectPunct(",");
      expectIdent("align");
      int align = smallInt("an alignment");
      expectPunct(")");
      return make(loc, t, GlobalLoad{param, index, align});
    }
    if (word == "shfl_xor") {
      expectPunct("(");
      Expr value = expr();
      expectPunct(",");
      int mask = smallInt("a lane mask");
      expectPunct(")");
      Type t = value->type;
      return make(loc, t, ShflXor{value, mask});
    }
    if (word == "smem") {
      Type t = typeArgument();
      std::optional<SmemRegion> region;
      Expr offset = sharedOffset(false, &region);
      return make(loc, t, SharedLoad{offset, region});
    }
    if (word == "smem_address")
      return make(loc, {DType::Int32, 1}, SharedAddress{arguments(1)[0]});
    error(loc, fmt::format("unknown operation '{}'", word));
  }

  // ldmatrix.x4.trans(smem[o]), mma.m16n8k16.float16(a, b, c), wgmma.m64n128k16.float16...(...)
  Expr dotted(SourceLoc loc, const std::string &word) {
    std::vector<std::string_view> parts;
    std::string_view rest = word;
    for (size_t dot; (dot = rest.find('.')) != std::string_view::npos; rest.remove_prefix(dot + 1))
      parts.push_back(rest.substr(0, dot));
    parts.push_back(rest);
    auto badForm = [&](std::string_view form) -> Expr {
      error(loc, fmt::format("malformed '{}' (expected {})", word, form));
    };
    advance();
    if (parts[0] == "ldmatrix") {
      auto num = parts.size() >= 2 && parts[1].size() == 2 && parts[1][0] == 'x'
                     ? unsignedValue(parts[1].substr(1))
                     : std::nullopt;
      if (!num || parts.size() > 3 || (parts.size() == 3 && parts[2] != "trans"))
        return badForm("ldmatrix.x1, .x2 or .x4, optionally .trans");
      expectPunct("(");
      std::optional<SmemRegion> region;
      Expr offset = sharedOffset(true, &region);
      expectPunct(")");
      int n = static_cast<int>(*num);
      return make(loc, {DType::Int32, n}, LdMatrix{offset, n, parts.size() == 3, region});
    }
    if (parts[0] == "mma") {
      auto input = parts.size() == 3 ? parseDType(parts[2]) : std::nullopt;
      if (!input || parts[1] != "m16n8k16")
        return badForm("mma.m16n8k16.float16 or mma.m16n8k16.bfloat16");
      auto args = arguments(3);
      return make(loc, {DType::Float32, 4}, MmaSync{args[0], args[1], args[2], *input});
    }
    if (parts[0] == "mfma") {
      int m = 0, n = 0, k = 0;
      auto input = parts.size() == 3 ? parseDType(parts[2]) : std::nullopt;
      bool shape = parts.size() == 3 && (parts[1] == "m32n32k8" || parts[1] == "m16n16k16");
      if (!input || !shape)
        return badForm("mfma.m32n32k8 or mfma.m16n16k16, then .float16 or .bfloat16");
      std::tie(m, n, k) = parts[1] == "m32n32k8" ? std::tuple{32, 32, 8} : std::tuple{16, 16, 16};
      auto args = arguments(3);
      return make(loc, {DType::Float32, m * n / 64},
                  Mfma{args[0], args[1], args[2], m, n, k, *input});
    }
    if (parts[0] == "wgmma")
      return wgmma(loc, parts, badForm);
    if (parts[0] == "shfl") {
      for (ShflMode m : {ShflMode::Xor, ShflMode::Down, ShflMode::Up, ShflMode::Idx})
        if (parts.size() == 2 && parts[1] == shflModeName(m)) {
          auto args = arguments(2);
          Type t = args[0]->type;
          return make(loc, t, Shfl{m, args[0], args[1]});
        }
      return badForm("shfl.xor, shfl.down, shfl.up or shfl.idx");
    }
    error(loc, fmt::format("unknown operation '{}'", word));
  }

  template <class BadForm>
  Expr wgmma(SourceLoc loc, const std::vector<std::string_view> &parts, BadForm &badForm) {
    constexpr std::string_view kForm =
        "wgmma.m64nNk16.DTYPE or wgmma.m64nNk32.FLOAT8[.FLOAT8] with .rs, .a_mn_major, "
        ".b_mn_major, .pendingN, .turn[wait|pass]N";
    std::string_view shape = parts.size() >= 3 ? parts[1] : "";
    auto input = parts.size() >= 3 ? parseDType(parts[2]) : std::nullopt;
    // k follows from the input type: 32 for float8, 16 otherwise.
    std::string_view k = input && dtypeBits(*input) == 8 ? "k32" : "k16";
    if (!input || !shape.starts_with("m64n") || !shape.ends_with(k) || shape.size() <= 7)
      return badForm(kForm);
    auto n = unsignedValue(shape.substr(4, shape.size() - 7));
    if (!n || *n > 256)
      return badForm(kForm);
    Wgmma w;
    w.n = static_cast<int>(*n);
    w.inputType = *input;
    size_t flagsFrom = 3;
    // B's type, written only where it differs from A's (float8 e4m3 x e5m2).
    if (auto b = parts.size() >= 4 ? parseDType(parts[3]) : std::nullopt) {
      if (*b == *input)
        return badForm(kForm);
      w.bInputType = *b;
      flagsFrom = 4;
    }
    std::map<std::string_view, bool *> flags = {
        {"rs", &w.aInRegisters}, {"a_mn_major", &w.aMnMajor}, {"b_mn_major", &w.bMnMajor}};
    for (size_t i = flagsFrom; i < parts.size(); ++i) {
      if (parts[i].starts_with("pending") && !w.pending) {
        auto n = unsignedValue(parts[i].substr(7));
        if (!n || *n < 1 || *n > INT_MAX)
          return badForm(kForm);
        w.pending = static_cast<int>(*n);
        continue;
      }
      if (parts[i].starts_with("turn") && w.turn.barrier < 0) {
        std::string_view rest = parts[i].substr(4);
        w.turn.wait = !rest.starts_with("pass");
        w.turn.pass = !rest.starts_with("wait");
        if (!w.turn.wait || !w.turn.pass)
          rest.remove_prefix(4);
        auto n = unsignedValue(rest);
        if (!n || *n > INT_MAX)
          return badForm(kForm);
        w.turn.barrier = static_cast<int>(*n);
        continue;
      }
      auto it = flags.find(parts[i]);
      if (it == flags.end() || *it->second)
        return badForm(kForm);
      *it->second = true;
    }
    expectPunct("(");
    w.acc = expr();
    while (accept(",")) {
      expectPunct("[");
      expectIdent("acc");
      WgmmaInstr in;
      in.accFirst = smallInt("the first accumulator lane");
      expectPunct(":");
      in.a = expr();
      expectPunct(",");
      in.bDesc = expr();
      expectPunct("]");
      w.instrs.push_back(std::move(in));
    }
    // The shared bytes it reads: `; begin, end` each.
    while (accept(";"))
      w.reads.push_back(regionBounds());
    expectPunct(")");
    Type t = w.acc->type;
    return make(loc, t, std::move(w));
  }

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

} // namespace

std::optional<Module> parseThreadIR(const SourceManager &sm, uint32_t file,
                                    DiagnosticEngine &diags) {
  Parser parser(sm.text(file), file, diags);
  Module m;
  try {
    m = parser.module();
  } catch (const ParseFailed &) {
    return std::nullopt;
  }
  parser.index(m);
  if (!verify(m, diags, [&](const void *p) { return parser.locate(p); }))
    return std::nullopt;
  return m;
}

} // namespace tilec::thir
