// The thread-IR parser's module structure (kernels, parameters) and statements.
#include "threadir/ThreadIRParserImpl.h"

#include "threadir/ThreadIRNames.h"
#include "threadir/ThreadIRText.h"

#include <bit>
#include <charconv>
#include <climits>
#include <cmath>
#include <limits>

namespace tilec::thir::detail {

Kernel Parser::kernel() {
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
  if (cur_.isIdent("balance_x")) {
    advance();
    k.persistentBalanceX = true;
  }
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

int Parser::intField(std::string_view field) {
  expectIdent(field);
  expectPunct("=");
  return smallInt(fmt::format("the value of {}", field));
}

Param Parser::param() {
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

TensorMapInfo Parser::tensorMap() {
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

int Parser::paramIndex() {
  if (cur_.kind != TokKind::Param)
    error(cur_.loc, fmt::format("expected a parameter (%name) but found {}", describe(cur_)));
  for (size_t i = 0; i < params_->size(); ++i)
    if ((*params_)[i].name == cur_.text) {
      advance();
      return static_cast<int>(i);
    }
  error(cur_.loc, fmt::format("unknown parameter '%{}'", cur_.text));
}

Body Parser::body() {
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

void Parser::indexBody(const Body &b, size_t &next) {
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

int Parser::varName() {
  auto id = cur_.kind == TokKind::Ident ? varId(cur_.text) : std::nullopt;
  if (!id)
    error(cur_.loc, fmt::format("expected a variable (v0, v1, ...) but found {}", describe(cur_)));
  advance();
  return *id;
}

void Parser::statement(Body &b) {
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

void Parser::let() {
  SourceLoc loc = cur_.loc;
  advance();
  if (cur_.kind != TokKind::Temp)
    error(cur_.loc, fmt::format("expected a temporary ($0, $1, ...) but found {}", describe(cur_)));
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

Stmt Parser::statementOp(const std::string &word) {
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
  if (word == "mbarrier.init" || word == "mbarrier.arrive" || word == "mbarrier.arrive.expect_tx" ||
      word == "mbarrier.wait") {
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

Stmt Parser::ifStatement() {
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

std::optional<SyncGroup> Parser::syncGroup() {
  if (!cur_.isIdent("sync"))
    return std::nullopt;
  advance();
  SyncGroup g;
  g.barrier = smallInt("a barrier id");
  expectPunct(",");
  g.threads = smallInt("a thread count");
  return g;
}

Stmt Parser::forStatement() {
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

std::pair<int, Expr> Parser::element() {
  int param = paramIndex();
  expectPunct("[");
  Expr index = expr();
  expectPunct("]");
  return {param, index};
}

Expr Parser::sharedOffset(bool withWord, std::optional<SmemRegion> *region) {
  if (withWord)
    expectIdent("smem");
  expectPunct("[");
  Expr offset = expr();
  if (region && accept(";"))
    *region = regionBounds();
  expectPunct("]");
  return offset;
}

SmemRegion Parser::regionBounds() {
  SmemRegion r;
  r.begin = integer(0, INT32_MAX, "a region's first byte");
  expectPunct(",");
  SourceLoc loc = cur_.loc;
  r.end = integer(0, INT32_MAX, "a region's end");
  if (r.end <= r.begin)
    error(loc, fmt::format("empty region [{}, {})", r.begin, r.end));
  return r;
}

} // namespace tilec::thir::detail
