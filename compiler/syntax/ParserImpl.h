// The parser's class, shared by Parser.cpp (declarations and statements) and ParseExpr.cpp
// (expressions). Private to the syntax library.
#pragma once

#include "syntax/AST.h"
#include "syntax/Lexer.h"
#include "syntax/Parser.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilec::parser_detail {

using namespace ast;

class Parser {
public:
  Parser(const SourceManager &sm, uint32_t file, DiagnosticEngine &diags)
      : lex_(sm, file, diags), diags_(diags), file_(file), startErrors_(diags.numErrors()) {
    advance();
  }

  Module parseModule();
  bool failed() const { return diags_.numErrors() != startErrors_; }

private:
  /// Counts nesting levels taken by one parse function and gives them back when it returns.
  /// Every way the AST can grow deeper (brackets, unary and binary operator chains, postfix
  /// chains, blocks, elif chains) goes through one, so the tree depth stays bounded and no
  /// later recursive pass can overflow the stack.
  class NestingScope {
  public:
    explicit NestingScope(Parser &p) : p_(p) {}
    ~NestingScope() { p_.depth_ -= entered_; }
    NestingScope(const NestingScope &) = delete;
    NestingScope &operator=(const NestingScope &) = delete;
    bool enter(SourceLoc loc) {
      ++entered_;
      if (++p_.depth_ <= kMaxNestingDepth)
        return true;
      p_.error(loc, fmt::format("nesting too deep (limit {})", kMaxNestingDepth));
      return false;
    }

  private:
    Parser &p_;
    int entered_ = 0;
  };

  // ---- Tokens --------------------------------------------------------------------------------
  void advance();
  TokenKind peekKind();
  bool at(TokenKind k) const { return tok_.kind == k; }
  bool accept(TokenKind k) {
    if (!at(k))
      return false;
    advance();
    return true;
  }
  bool expect(TokenKind k, const char *message);
  bool expectNewline(const char *message);
  void error(SourceLoc loc, std::string message) { diags_.error(loc, std::move(message)); }
  void synchronize();
  void skipBlock();

  template <typename T> ExprPtr makeExpr(SourceLoc begin, T node) {
    auto e = std::make_unique<Expr>();
    e->range = {begin, prevEnd_};
    e->node = std::move(node);
    return e;
  }
  template <typename T> StmtPtr makeStmt(SourceLoc begin, T node) {
    auto s = std::make_unique<Stmt>();
    s->range = {begin, prevEnd_};
    s->node = std::move(node);
    return s;
  }

  // ---- Top level -----------------------------------------------------------------------------
  bool parseImport(Module &m);
  bool parseFromImport(Module &m);
  /// `const NAME = value`, or `NAME = value` (keyword false: the parser is at NAME).
  bool parseConst(Module &m, bool keyword = true);
  bool parseFuncDef(Module &m);
  bool parseDottedName(std::vector<std::string> &parts, const char *message);

  // ---- Statements ----------------------------------------------------------------------------
  void parseBlock(Block &body);
  void parseStatementInto(Block &body);
  StmtPtr parseSimpleStatement();
  StmtPtr parseFor();
  StmtPtr parseWith();
  StmtPtr parseIf();
  bool parseNameList(std::vector<LoopVar> &vars, const char *message);
  bool checkTarget(const Expr &target);

  // ---- Expressions ---------------------------------------------------------------------------
  ExprPtr parseExprList();
  ExprPtr parseExpr();
  ExprPtr parseOr();
  ExprPtr parseAnd();
  ExprPtr parseNot();
  ExprPtr parseComparison();
  ExprPtr parseBitOr();
  ExprPtr parseBitXor();
  ExprPtr parseBitAnd();
  ExprPtr parseShift();
  /// A left-associative chain of `operand` joined by any of `ops`.
  ExprPtr parseLeftAssoc(std::initializer_list<std::pair<TokenKind, BinaryOp>> ops,
                         ExprPtr (Parser::*operand)());
  ExprPtr parseArith();
  ExprPtr parseTerm();
  ExprPtr parseUnary();
  ExprPtr parsePower();
  ExprPtr parsePostfix();
  ExprPtr parseAtom();
  ExprPtr parseSubscriptIndex();
  bool parseCallArgs(Call &call);

  Lexer lex_;
  DiagnosticEngine &diags_;
  uint32_t file_;
  unsigned startErrors_;
  Token tok_;
  std::optional<Token> ahead_;
  SourceLoc prevEnd_;
  int depth_ = 0;
  bool aborted_ = false;
};

} // namespace tilec::parser_detail
