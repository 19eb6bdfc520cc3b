// Expression parsing: Python's precedence ladder, one function per level.
#include "syntax/ParserImpl.h"

namespace tilec::parser_detail {
namespace {

bool startsExpression(TokenKind k) {
  switch (k) {
  case TokenKind::Identifier:
  case TokenKind::IntLiteral:
  case TokenKind::FloatLiteral:
  case TokenKind::StringLiteral:
  case TokenKind::KwTrue:
  case TokenKind::KwFalse:
  case TokenKind::LParen:
  case TokenKind::LBracket:
  case TokenKind::LBrace:
  case TokenKind::Minus:
  case TokenKind::Plus:
  case TokenKind::KwNot:
    return true;
  default:
    return false;
  }
}

std::optional<BinaryOp> comparisonOp(TokenKind k) {
  switch (k) {
  case TokenKind::EqEq:
    return BinaryOp::Eq;
  case TokenKind::NotEq:
    return BinaryOp::Ne;
  case TokenKind::Less:
    return BinaryOp::Lt;
  case TokenKind::LessEq:
    return BinaryOp::Le;
  case TokenKind::Greater:
    return BinaryOp::Gt;
  case TokenKind::GreaterEq:
    return BinaryOp::Ge;
  default:
    return std::nullopt;
  }
}

} // namespace

// ---- Expressions -----------------------------------------------------------------------------

ExprPtr Parser::parseExprList() {
  SourceLoc begin = tok_.loc;
  ExprPtr first = parseExpr();
  if (!first || !at(TokenKind::Comma))
    return first;
  Tuple t;
  t.elts.push_back(std::move(first));
  while (accept(TokenKind::Comma)) {
    if (!startsExpression(tok_.kind))
      break;
    ExprPtr e = parseExpr();
    if (!e)
      return nullptr;
    t.elts.push_back(std::move(e));
  }
  return makeExpr(begin, std::move(t));
}

ExprPtr Parser::parseExpr() {
  NestingScope scope(*this);
  if (!scope.enter(tok_.loc))
    return nullptr;
  SourceLoc begin = tok_.loc;
  ExprPtr then = parseOr();
  if (!then || !accept(TokenKind::KwIf))
    return then;
  ExprPtr cond = parseOr();
  if (!cond || !expect(TokenKind::KwElse, "expected 'else' in conditional expression"))
    return nullptr;
  ExprPtr otherwise = parseExpr();
  if (!otherwise)
    return nullptr;
  return makeExpr(begin, Conditional{std::move(cond), std::move(then), std::move(otherwise)});
}

ExprPtr Parser::parseOr() {
  NestingScope scope(*this);
  SourceLoc begin = tok_.loc;
  ExprPtr lhs = parseAnd();
  while (lhs && at(TokenKind::KwOr)) {
    if (!scope.enter(tok_.loc))
      return nullptr;
    advance();
    ExprPtr rhs = parseAnd();
    if (!rhs)
      return nullptr;
    lhs = makeExpr(begin, Binary{BinaryOp::Or, std::move(lhs), std::move(rhs)});
  }
  return lhs;
}

ExprPtr Parser::parseAnd() {
  NestingScope scope(*this);
  SourceLoc begin = tok_.loc;
  ExprPtr lhs = parseNot();
  while (lhs && at(TokenKind::KwAnd)) {
    if (!scope.enter(tok_.loc))
      return nullptr;
    advance();
    ExprPtr rhs = parseNot();
    if (!rhs)
      return nullptr;
    lhs = makeExpr(begin, Binary{BinaryOp::And, std::move(lhs), std::move(rhs)});
  }
  return lhs;
}

ExprPtr Parser::parseNot() {
  if (!at(TokenKind::KwNot))
    return parseComparison();
  NestingScope scope(*this);
  SourceLoc begin = tok_.loc;
  if (!scope.enter(begin))
    return nullptr;
  advance();
  ExprPtr operand = parseNot();
  if (!operand)
    return nullptr;
  return makeExpr(begin, Unary{UnaryOp::Not, std::move(operand)});
}

ExprPtr Parser::parseComparison() {
  SourceLoc begin = tok_.loc;
  ExprPtr lhs = parseBitOr();
  if (!lhs)
    return nullptr;
  std::optional<BinaryOp> op = comparisonOp(tok_.kind);
  if (!op)
    return lhs;
  advance();
  ExprPtr rhs = parseBitOr();
  if (!rhs)
    return nullptr;
  if (comparisonOp(tok_.kind)) {
    error(tok_.loc, "chained comparisons are not supported");
    return nullptr;
  }
  return makeExpr(begin, Binary{*op, std::move(lhs), std::move(rhs)});
}

// Python's precedence: | below ^ below & below << >> below + -.
ExprPtr Parser::parseBitOr() {
  return parseLeftAssoc({{TokenKind::Pipe, BinaryOp::BitOr}}, &Parser::parseBitXor);
}
ExprPtr Parser::parseBitXor() {
  return parseLeftAssoc({{TokenKind::Caret, BinaryOp::BitXor}}, &Parser::parseBitAnd);
}
ExprPtr Parser::parseBitAnd() {
  return parseLeftAssoc({{TokenKind::Amp, BinaryOp::BitAnd}}, &Parser::parseShift);
}
ExprPtr Parser::parseShift() {
  return parseLeftAssoc({{TokenKind::LShift, BinaryOp::Shl}, {TokenKind::RShift, BinaryOp::Shr}},
                        &Parser::parseArith);
}

ExprPtr Parser::parseLeftAssoc(std::initializer_list<std::pair<TokenKind, BinaryOp>> ops,
                               ExprPtr (Parser::*operand)()) {
  NestingScope scope(*this);
  SourceLoc begin = tok_.loc;
  ExprPtr lhs = (this->*operand)();
  for (;;) {
    if (!lhs)
      return nullptr;
    const std::pair<TokenKind, BinaryOp> *op = nullptr;
    for (const auto &o : ops)
      if (at(o.first))
        op = &o;
    if (!op)
      return lhs;
    if (!scope.enter(tok_.loc))
      return nullptr;
    advance();
    ExprPtr rhs = (this->*operand)();
    if (!rhs)
      return nullptr;
    lhs = makeExpr(begin, Binary{op->second, std::move(lhs), std::move(rhs)});
  }
}

ExprPtr Parser::parseArith() {
  return parseLeftAssoc({{TokenKind::Plus, BinaryOp::Add}, {TokenKind::Minus, BinaryOp::Sub}},
                        &Parser::parseTerm);
}

ExprPtr Parser::parseTerm() {
  return parseLeftAssoc({{TokenKind::Star, BinaryOp::Mul},
                         {TokenKind::Slash, BinaryOp::Div},
                         {TokenKind::SlashSlash, BinaryOp::FloorDiv},
                         {TokenKind::Percent, BinaryOp::Mod}},
                        &Parser::parseUnary);
}

ExprPtr Parser::parseUnary() {
  if (!at(TokenKind::Minus) && !at(TokenKind::Plus) && !at(TokenKind::Tilde))
    return parsePower();
  NestingScope scope(*this);
  SourceLoc begin = tok_.loc;
  UnaryOp op = at(TokenKind::Minus)  ? UnaryOp::Neg
               : at(TokenKind::Plus) ? UnaryOp::Pos
                                     : UnaryOp::Invert;
  if (!scope.enter(begin))
    return nullptr;
  advance();
  ExprPtr operand = parseUnary();
  if (!operand)
    return nullptr;
  return makeExpr(begin, Unary{op, std::move(operand)});
}

ExprPtr Parser::parsePower() {
  SourceLoc begin = tok_.loc;
  ExprPtr base = parsePostfix();
  if (!base || !at(TokenKind::StarStar))
    return base;
  NestingScope scope(*this);
  if (!scope.enter(tok_.loc))
    return nullptr;
  advance();
  // `**` is right-associative and its right operand may carry a sign: `2 ** -x`.
  ExprPtr exponent = parseUnary();
  if (!exponent)
    return nullptr;
  return makeExpr(begin, Binary{BinaryOp::Pow, std::move(base), std::move(exponent)});
}

ExprPtr Parser::parsePostfix() {
  NestingScope scope(*this);
  SourceLoc begin = tok_.loc;
  ExprPtr e = parseAtom();
  while (e) {
    if (at(TokenKind::LParen)) {
      if (!scope.enter(tok_.loc))
        return nullptr;
      Call call;
      call.callee = std::move(e);
      if (!parseCallArgs(call))
        return nullptr;
      e = makeExpr(begin, std::move(call));
    } else if (at(TokenKind::LBracket)) {
      if (!scope.enter(tok_.loc))
        return nullptr;
      advance();
      Subscript sub;
      sub.base = std::move(e);
      for (;;) {
        ExprPtr index = parseSubscriptIndex();
        if (!index)
          return nullptr;
        sub.indices.push_back(std::move(index));
        if (!accept(TokenKind::Comma) || at(TokenKind::RBracket))
          break;
      }
      if (!expect(TokenKind::RBracket, "expected ',' or ']' in subscript"))
        return nullptr;
      e = makeExpr(begin, std::move(sub));
    } else if (at(TokenKind::Dot)) {
      if (!scope.enter(tok_.loc))
        return nullptr;
      advance();
      if (!at(TokenKind::Identifier)) {
        error(tok_.loc, "expected an attribute name after '.'");
        return nullptr;
      }
      Attribute attr{std::move(e), std::string(tok_.text), tok_.loc};
      advance();
      e = makeExpr(begin, std::move(attr));
    } else {
      break;
    }
  }
  return e;
}

ExprPtr Parser::parseSubscriptIndex() {
  SourceLoc begin = tok_.loc;
  ExprPtr lo;
  if (!at(TokenKind::Colon)) {
    lo = parseExpr();
    if (!lo || !at(TokenKind::Colon))
      return lo;
  }
  advance();
  ExprPtr hi;
  if (!at(TokenKind::Comma) && !at(TokenKind::RBracket) && !at(TokenKind::Colon)) {
    hi = parseExpr();
    if (!hi)
      return nullptr;
  }
  if (at(TokenKind::Colon)) {
    error(tok_.loc, "slice steps are not supported");
    return nullptr;
  }
  return makeExpr(begin, Slice{std::move(lo), std::move(hi)});
}

bool Parser::parseCallArgs(Call &call) {
  advance(); // '('
  while (!at(TokenKind::RParen)) {
    if (at(TokenKind::Star) || at(TokenKind::StarStar)) {
      error(tok_.loc, "argument unpacking is not supported");
      return false;
    }
    if (at(TokenKind::Identifier) && peekKind() == TokenKind::Assign) {
      KeywordArg kw{std::string(tok_.text), tok_.loc, nullptr};
      for (const KeywordArg &other : call.kwargs) {
        if (other.name == kw.name) {
          error(tok_.loc, fmt::format("keyword argument '{}' repeated", kw.name));
          return false;
        }
      }
      advance();
      advance();
      kw.value = parseExpr();
      if (!kw.value)
        return false;
      call.kwargs.push_back(std::move(kw));
    } else {
      ExprPtr arg = parseExpr();
      if (!arg)
        return false;
      if (!call.kwargs.empty()) {
        error(arg->loc(), "positional argument follows keyword argument");
        return false;
      }
      call.args.push_back(std::move(arg));
    }
    if (!accept(TokenKind::Comma))
      break;
  }
  return expect(TokenKind::RParen, "expected ',' or ')' in argument list");
}

ExprPtr Parser::parseAtom() {
  SourceLoc begin = tok_.loc;
  switch (tok_.kind) {
  case TokenKind::IntLiteral: {
    int64_t v = tok_.intValue;
    advance();
    return makeExpr(begin, IntLit{v});
  }
  case TokenKind::FloatLiteral: {
    double v = tok_.floatValue;
    advance();
    return makeExpr(begin, FloatLit{v});
  }
  case TokenKind::StringLiteral: {
    // Adjacent string literals concatenate, as in Python.
    std::string value;
    while (at(TokenKind::StringLiteral)) {
      value += tok_.stringValue;
      advance();
    }
    return makeExpr(begin, StringLit{std::move(value)});
  }
  case TokenKind::KwTrue:
  case TokenKind::KwFalse: {
    bool v = at(TokenKind::KwTrue);
    advance();
    return makeExpr(begin, BoolLit{v});
  }
  case TokenKind::Identifier: {
    std::string id(tok_.text);
    advance();
    return makeExpr(begin, Name{std::move(id)});
  }
  case TokenKind::LParen: {
    advance();
    if (accept(TokenKind::RParen))
      return makeExpr(begin, Tuple{});
    ExprPtr first = parseExpr();
    if (!first)
      return nullptr;
    if (accept(TokenKind::RParen))
      return first;
    Tuple t;
    t.elts.push_back(std::move(first));
    while (accept(TokenKind::Comma) && !at(TokenKind::RParen)) {
      ExprPtr e = parseExpr();
      if (!e)
        return nullptr;
      t.elts.push_back(std::move(e));
    }
    if (!expect(TokenKind::RParen, "expected ',' or ')' in parenthesised expression"))
      return nullptr;
    return makeExpr(begin, std::move(t));
  }
  case TokenKind::LBracket: {
    advance();
    List l;
    while (!at(TokenKind::RBracket)) {
      ExprPtr e = parseExpr();
      if (!e)
        return nullptr;
      l.elts.push_back(std::move(e));
      if (!accept(TokenKind::Comma))
        break;
    }
    if (!expect(TokenKind::RBracket, "expected ',' or ']' in list"))
      return nullptr;
    return makeExpr(begin, std::move(l));
  }
  case TokenKind::LBrace: {
    advance();
    Dict d;
    while (!at(TokenKind::RBrace)) {
      ExprPtr key = parseExpr();
      if (!key || !expect(TokenKind::Colon, "expected ':' after dictionary key"))
        return nullptr;
      ExprPtr value = parseExpr();
      if (!value)
        return nullptr;
      d.entries.push_back({std::move(key), std::move(value)});
      if (!accept(TokenKind::Comma))
        break;
    }
    if (!expect(TokenKind::RBrace, "expected ',' or '}' in dictionary"))
      return nullptr;
    return makeExpr(begin, std::move(d));
  }
  default:
    error(begin, "expected an expression");
    return nullptr;
  }
}

} // namespace tilec::parser_detail
