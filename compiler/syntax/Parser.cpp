#include "syntax/Parser.h"

#include "syntax/ParserImpl.h"

#include <fmt/format.h>

#include <string>
#include <utility>

namespace tilec {
namespace parser_detail {
namespace {

bool isLayout(TokenKind k) {
  return k == TokenKind::Newline || k == TokenKind::Indent || k == TokenKind::Dedent ||
         k == TokenKind::Eof;
}

std::optional<BinaryOp> augmentedOp(TokenKind k) {
  switch (k) {
  case TokenKind::PlusAssign:
    return BinaryOp::Add;
  case TokenKind::MinusAssign:
    return BinaryOp::Sub;
  case TokenKind::StarAssign:
    return BinaryOp::Mul;
  case TokenKind::SlashAssign:
    return BinaryOp::Div;
  case TokenKind::SlashSlashAssign:
    return BinaryOp::FloorDiv;
  case TokenKind::PercentAssign:
    return BinaryOp::Mod;
  case TokenKind::StarStarAssign:
    return BinaryOp::Pow;
  case TokenKind::AmpAssign:
    return BinaryOp::BitAnd;
  case TokenKind::PipeAssign:
    return BinaryOp::BitOr;
  case TokenKind::CaretAssign:
    return BinaryOp::BitXor;
  case TokenKind::LShiftAssign:
    return BinaryOp::Shl;
  case TokenKind::RShiftAssign:
    return BinaryOp::Shr;
  default:
    return std::nullopt;
  }
}

bool isSimpleTarget(const Expr &e) {
  return std::holds_alternative<Name>(e.node) || std::holds_alternative<Subscript>(e.node);
}

} // namespace

// ---- Tokens ----------------------------------------------------------------------------------

void Parser::advance() {
  if (!isLayout(tok_.kind))
    prevEnd_ = tok_.endLoc;
  if (aborted_) {
    tok_.kind = TokenKind::Eof;
    return;
  }
  if (ahead_) {
    tok_ = std::move(*ahead_);
    ahead_.reset();
  } else {
    tok_ = lex_.next();
  }
  // Past the error limit nothing more would be shown: stop instead of churning through a
  // possibly huge garbage input.
  if (diags_.numErrors() > DiagnosticEngine::kMaxErrors) {
    aborted_ = true;
    tok_.kind = TokenKind::Eof;
  }
}

TokenKind Parser::peekKind() {
  if (aborted_)
    return TokenKind::Eof;
  if (!ahead_)
    ahead_ = lex_.next();
  return ahead_->kind;
}

bool Parser::expect(TokenKind k, const char *message) {
  if (accept(k))
    return true;
  error(tok_.loc, message);
  return false;
}

bool Parser::expectNewline(const char *message) {
  if (at(TokenKind::Eof) || accept(TokenKind::Newline))
    return true;
  error(tok_.loc, message);
  return false;
}

void Parser::synchronize() {
  int nested = 0;
  while (!at(TokenKind::Eof)) {
    if (at(TokenKind::Indent)) {
      ++nested;
    } else if (at(TokenKind::Dedent)) {
      if (nested == 0)
        return;
      advance();
      if (--nested == 0)
        return;
      continue;
    } else if (at(TokenKind::Newline) && nested == 0) {
      advance();
      break;
    }
    advance();
  }
  // A compound statement whose header failed still owns the block below it.
  if (at(TokenKind::Indent))
    skipBlock();
}

void Parser::skipBlock() {
  int nested = 0;
  do {
    if (at(TokenKind::Indent))
      ++nested;
    else if (at(TokenKind::Dedent))
      --nested;
    advance();
  } while (nested > 0 && !at(TokenKind::Eof));
}

// ---- Top level -------------------------------------------------------------------------------

Module Parser::parseModule() {
  Module m;
  m.file = file_;
  while (!at(TokenKind::Eof)) {
    bool ok = true;
    switch (tok_.kind) {
    case TokenKind::Newline:
    case TokenKind::Dedent:
      advance();
      continue;
    case TokenKind::Indent:
      error(tok_.loc, "unexpected indent");
      skipBlock();
      continue;
    case TokenKind::At:
    case TokenKind::KwDef:
      ok = parseFuncDef(m);
      break;
    case TokenKind::KwImport:
      ok = parseImport(m);
      break;
    case TokenKind::KwFrom:
      ok = parseFromImport(m);
      break;
    case TokenKind::KwConst:
      ok = parseConst(m);
      break;
    case TokenKind::Identifier:
      // `NAME = value`, as a TileLang program's Python sets `M = T.dynamic("m")` or
      // `accum_dtype = "float"`: a constant, as with `const`.
      if (peekKind() == TokenKind::Assign) {
        ok = parseConst(m, /*keyword=*/false);
        break;
      }
      [[fallthrough]];
    default:
      error(tok_.loc, "expected 'def', 'const', 'import', 'from' or 'NAME = value' at top level");
      ok = false;
      break;
    }
    if (!ok)
      synchronize();
  }
  return m;
}

bool Parser::parseDottedName(std::vector<std::string> &parts, const char *message) {
  do {
    if (!at(TokenKind::Identifier)) {
      error(tok_.loc, message);
      return false;
    }
    parts.emplace_back(tok_.text);
    advance();
  } while (accept(TokenKind::Dot));
  return true;
}

bool Parser::parseImport(Module &m) {
  advance();
  do {
    Import imp;
    imp.loc = tok_.loc;
    if (!parseDottedName(imp.module, "expected a module name after 'import'"))
      return false;
    if (accept(TokenKind::KwAs)) {
      if (!at(TokenKind::Identifier)) {
        error(tok_.loc, "expected a name after 'as'");
        return false;
      }
      imp.alias = std::string(tok_.text);
      advance();
    }
    m.items.emplace_back(std::move(imp));
  } while (accept(TokenKind::Comma));
  return expectNewline("expected end of line after import");
}

bool Parser::parseFromImport(Module &m) {
  FromImport fi;
  fi.loc = tok_.loc;
  advance();
  if (at(TokenKind::Dot)) {
    error(tok_.loc, "relative imports are not supported");
    return false;
  }
  if (!parseDottedName(fi.module, "expected a module name after 'from'"))
    return false;
  if (!expect(TokenKind::KwImport, "expected 'import' after module name"))
    return false;
  if (at(TokenKind::Star)) {
    error(tok_.loc, "wildcard imports are not supported");
    return false;
  }
  bool parenthesised = accept(TokenKind::LParen);
  for (;;) {
    if (parenthesised && at(TokenKind::RParen))
      break;
    if (!at(TokenKind::Identifier)) {
      error(tok_.loc, "expected a name to import");
      return false;
    }
    ImportedName n{std::string(tok_.text), {}, tok_.loc};
    advance();
    if (accept(TokenKind::KwAs)) {
      if (!at(TokenKind::Identifier)) {
        error(tok_.loc, "expected a name after 'as'");
        return false;
      }
      n.alias = std::string(tok_.text);
      advance();
    }
    fi.names.push_back(std::move(n));
    if (!accept(TokenKind::Comma))
      break;
  }
  if (parenthesised && !expect(TokenKind::RParen, "expected ',' or ')' after imported name"))
    return false;
  if (fi.names.empty()) {
    error(tok_.loc, "expected a name to import");
    return false;
  }
  m.items.emplace_back(std::move(fi));
  return expectNewline("expected end of line after import");
}

bool Parser::parseConst(Module &m, bool keyword) {
  ConstDecl c;
  c.loc = tok_.loc;
  if (keyword)
    advance();
  if (!at(TokenKind::Identifier)) {
    error(tok_.loc, "expected a constant name after 'const'");
    return false;
  }
  c.name = std::string(tok_.text);
  c.nameLoc = tok_.loc;
  advance();
  if (!expect(TokenKind::Assign, "expected '=' after constant name"))
    return false;
  c.value = parseExprList();
  if (!c.value || !expectNewline("expected end of line after constant"))
    return false;
  m.items.emplace_back(std::move(c));
  return true;
}

bool Parser::parseFuncDef(Module &m) {
  FuncDef f;
  f.loc = tok_.loc;
  while (at(TokenKind::At)) {
    Decorator d;
    d.loc = tok_.loc;
    advance();
    if (!at(TokenKind::Identifier)) {
      error(tok_.loc, "expected a decorator name after '@'");
      return false;
    }
    d.name = std::string(tok_.text);
    advance();
    while (accept(TokenKind::Dot)) {
      if (!at(TokenKind::Identifier)) {
        error(tok_.loc, "expected a name after '.'");
        return false;
      }
      d.name += '.';
      d.name += tok_.text;
      advance();
    }
    if (at(TokenKind::LParen)) {
      Call call;
      if (!parseCallArgs(call))
        return false;
      d.call = std::move(call);
    }
    if (!expectNewline("expected end of line after decorator"))
      return false;
    f.decorators.push_back(std::move(d));
  }
  if (!expect(TokenKind::KwDef, "expected 'def' after decorator"))
    return false;
  if (!at(TokenKind::Identifier)) {
    error(tok_.loc, "expected a function name after 'def'");
    return false;
  }
  f.name = std::string(tok_.text);
  f.nameLoc = tok_.loc;
  advance();
  if (!expect(TokenKind::LParen, "expected '(' after function name"))
    return false;
  while (!at(TokenKind::RParen)) {
    if (!at(TokenKind::Identifier)) {
      error(tok_.loc, "expected a parameter name");
      return false;
    }
    Param p{std::string(tok_.text), tok_.loc, nullptr};
    advance();
    if (accept(TokenKind::Colon)) {
      p.annotation = parseExpr();
      if (!p.annotation)
        return false;
    }
    if (at(TokenKind::Assign)) {
      error(tok_.loc, "default parameter values are not supported");
      return false;
    }
    f.params.push_back(std::move(p));
    if (!accept(TokenKind::Comma))
      break;
  }
  if (!expect(TokenKind::RParen, "expected ',' or ')' in parameter list"))
    return false;
  // A return annotation (`-> None`) is accepted for Python compatibility and carries nothing.
  if (accept(TokenKind::Arrow) && !parseExpr())
    return false;
  if (!expect(TokenKind::Colon, "expected ':' after function signature"))
    return false;
  parseBlock(f.body);
  m.items.emplace_back(std::move(f));
  return true;
}

// ---- Statements ------------------------------------------------------------------------------

void Parser::parseBlock(Block &body) {
  if (!at(TokenKind::Newline)) {
    // `if c: pass` - one simple statement on the header line.
    if (at(TokenKind::Eof)) {
      error(tok_.loc, "expected indented block");
      return;
    }
    if (StmtPtr s = parseSimpleStatement())
      body.push_back(std::move(s));
    else
      synchronize();
    return;
  }
  advance();
  if (!at(TokenKind::Indent)) {
    error(tok_.loc, "expected indented block");
    return;
  }
  NestingScope scope(*this);
  if (!scope.enter(tok_.loc)) {
    skipBlock();
    return;
  }
  advance();
  while (!at(TokenKind::Dedent) && !at(TokenKind::Eof))
    parseStatementInto(body);
  accept(TokenKind::Dedent);
}

void Parser::parseStatementInto(Block &body) {
  StmtPtr s;
  switch (tok_.kind) {
  case TokenKind::Newline:
    advance();
    return;
  case TokenKind::Indent:
    error(tok_.loc, "unexpected indent");
    skipBlock();
    return;
  case TokenKind::KwFor:
    s = parseFor();
    break;
  case TokenKind::KwWith:
    s = parseWith();
    break;
  case TokenKind::KwIf:
    s = parseIf();
    break;
  case TokenKind::KwElif:
  case TokenKind::KwElse:
    error(tok_.loc, fmt::format("{} without a matching 'if'", tokenKindName(tok_.kind)));
    break;
  case TokenKind::KwDef:
  case TokenKind::At:
  case TokenKind::KwImport:
  case TokenKind::KwFrom:
  case TokenKind::KwConst:
    error(tok_.loc, fmt::format("{} is only allowed at the top level", tokenKindName(tok_.kind)));
    break;
  default:
    s = parseSimpleStatement();
    break;
  }
  if (s)
    body.push_back(std::move(s));
  else
    synchronize();
}

bool Parser::checkTarget(const Expr &target) {
  if (isSimpleTarget(target))
    return true;
  if (const auto *t = std::get_if<Tuple>(&target.node); t && !t->elts.empty()) {
    for (const ExprPtr &e : t->elts) {
      if (!isSimpleTarget(*e)) {
        error(e->loc(), "invalid assignment target");
        return false;
      }
    }
    return true;
  }
  error(target.loc(), "invalid assignment target");
  return false;
}

StmtPtr Parser::parseSimpleStatement() {
  SourceLoc begin = tok_.loc;
  StmtPtr s;
  if (accept(TokenKind::KwPass)) {
    s = makeStmt(begin, Pass{});
  } else if (accept(TokenKind::KwReturn)) {
    Return r;
    if (!at(TokenKind::Newline) && !at(TokenKind::Eof)) {
      r.value = parseExprList();
      if (!r.value)
        return nullptr;
    }
    s = makeStmt(begin, std::move(r));
  } else {
    ExprPtr e = parseExprList();
    if (!e)
      return nullptr;
    if (at(TokenKind::Assign)) {
      if (!checkTarget(*e))
        return nullptr;
      advance();
      ExprPtr value = parseExprList();
      if (!value)
        return nullptr;
      if (at(TokenKind::Assign)) {
        error(tok_.loc, "chained assignment is not supported");
        return nullptr;
      }
      s = makeStmt(begin, Assign{std::move(e), std::move(value)});
    } else if (std::optional<BinaryOp> op = augmentedOp(tok_.kind)) {
      if (!isSimpleTarget(*e)) {
        error(e->loc(), "invalid assignment target");
        return nullptr;
      }
      advance();
      ExprPtr value = parseExprList();
      if (!value)
        return nullptr;
      s = makeStmt(begin, AugAssign{*op, std::move(e), std::move(value)});
    } else {
      s = makeStmt(begin, ExprStmt{std::move(e)});
    }
  }
  if (!expectNewline("expected end of line after statement"))
    return nullptr;
  return s;
}

bool Parser::parseNameList(std::vector<LoopVar> &vars, const char *message) {
  bool parenthesised = accept(TokenKind::LParen);
  for (;;) {
    if (!at(TokenKind::Identifier)) {
      error(tok_.loc, message);
      return false;
    }
    vars.push_back({std::string(tok_.text), tok_.loc});
    advance();
    if (!accept(TokenKind::Comma))
      break;
    // A trailing comma ends the list.
    if (!at(TokenKind::Identifier))
      break;
  }
  return !parenthesised || expect(TokenKind::RParen, "expected ',' or ')' after names");
}

StmtPtr Parser::parseFor() {
  SourceLoc begin = tok_.loc;
  advance();
  For f;
  if (!parseNameList(f.vars, "expected a loop variable name"))
    return nullptr;
  if (!expect(TokenKind::KwIn, "expected 'in' after loop variables"))
    return nullptr;
  f.iter = parseExpr();
  if (!f.iter || !expect(TokenKind::Colon, "expected ':' after for header"))
    return nullptr;
  parseBlock(f.body);
  return makeStmt(begin, std::move(f));
}

StmtPtr Parser::parseWith() {
  SourceLoc begin = tok_.loc;
  advance();
  With w;
  w.expr = parseExpr();
  if (!w.expr)
    return nullptr;
  if (accept(TokenKind::KwAs) && !parseNameList(w.vars, "expected a name after 'as'"))
    return nullptr;
  if (!expect(TokenKind::Colon, "expected ':' after with header"))
    return nullptr;
  parseBlock(w.body);
  return makeStmt(begin, std::move(w));
}

StmtPtr Parser::parseIf() {
  SourceLoc begin = tok_.loc;
  advance();
  ExprPtr cond = parseExpr();
  if (!cond || !expect(TokenKind::Colon, "expected ':' after if condition"))
    return nullptr;
  StmtPtr root = makeStmt(begin, If{std::move(cond), {}, {}});
  std::vector<Stmt *> chain{root.get()};
  If *cur = &std::get<If>(root->node);
  parseBlock(cur->then);
  // Each elif nests one If deeper in the tree, so the chain counts towards the nesting limit.
  NestingScope scope(*this);
  while (at(TokenKind::KwElif)) {
    SourceLoc elifLoc = tok_.loc;
    if (!scope.enter(elifLoc))
      return nullptr;
    advance();
    ExprPtr elifCond = parseExpr();
    if (!elifCond || !expect(TokenKind::Colon, "expected ':' after elif condition"))
      return nullptr;
    StmtPtr elif = makeStmt(elifLoc, If{std::move(elifCond), {}, {}});
    chain.push_back(elif.get());
    cur->orelse.push_back(std::move(elif));
    cur = &std::get<If>(chain.back()->node);
    parseBlock(cur->then);
  }
  if (accept(TokenKind::KwElse)) {
    if (!expect(TokenKind::Colon, "expected ':' after 'else'"))
      return nullptr;
    parseBlock(cur->orelse);
  }
  for (Stmt *s : chain)
    s->range.end = prevEnd_;
  return root;
}

} // namespace parser_detail

std::optional<ast::Module> parseModule(const SourceManager &sm, uint32_t file,
                                       DiagnosticEngine &diags) {
  size_t size = sm.text(file).size();
  if (size > kMaxSourceFileSize) {
    diags.error(SourceLoc{file, 1, 1},
                fmt::format("source file is too large ({} bytes; the limit is 16 MiB)", size));
    return std::nullopt;
  }
  parser_detail::Parser parser(sm, file, diags);
  ast::Module m = parser.parseModule();
  if (parser.failed())
    return std::nullopt;
  return m;
}

} // namespace tilec
