#include "threadir/ThreadIRLexer.h"

#include "support/DType.h"
#include "threadir/ThreadIRVerifier.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <climits>

namespace tilec::thir {

namespace {

bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }
int hexValue(char c) {
  if (isDigit(c))
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::string describeChar(char c) {
  auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f)
    return fmt::format("'{}'", c);
  return fmt::format("byte 0x{:02x}", u);
}

} // namespace

void Lexer::advance(size_t n) {
  for (size_t i = 0; i < n && pos_ < text_.size(); ++i) {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }
}

Token Lexer::next() {
  for (;;) {
    char c = peek();
    if (atEnd())
      return make(TokKind::End, "", loc());
    if (c == ' ' || c == '\t' || c == '\r') {
      advance();
    } else if (c == '#') {
      while (!atEnd() && peek() != '\n')
        advance();
    } else if (c == '\n') {
      SourceLoc start = loc();
      advance();
      if (brackets_ == 0)
        return make(TokKind::Newline, "\n", start);
    } else {
      break;
    }
  }
  SourceLoc start = loc();
  char c = peek();
  if (isIdentStart(c))
    return identifier(start);
  if (isDigit(c))
    return number(start);
  if (c == '"')
    return string(start);
  if (c == '%' && (isIdentStart(peek(1)) || peek(1) == '"')) {
    advance();
    if (peek() == '"') {
      Token t = string(start);
      if (t.kind == TokKind::String)
        t.kind = TokKind::Param;
      return t;
    }
    size_t begin = pos_;
    while (isIdentChar(peek()))
      advance();
    return make(TokKind::Param, std::string(text_.substr(begin, pos_ - begin)), start);
  }
  if (c == '$') {
    advance();
    size_t begin = pos_;
    while (isDigit(peek()))
      advance();
    if (begin == pos_)
      return make(TokKind::Error, "expected digits after '$'", start);
    return make(TokKind::Temp, std::string(text_.substr(begin, pos_ - begin)), start);
  }
  return punct(start);
}

Token Lexer::identifier(SourceLoc start) {
  size_t begin = pos_;
  while (isIdentChar(peek()) || (peek() == '.' && isIdentChar(peek(1))))
    advance();
  return make(TokKind::Ident, std::string(text_.substr(begin, pos_ - begin)), start);
}

Token Lexer::number(SourceLoc start) {
  size_t begin = pos_;
  TokKind kind = TokKind::Int;
  if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X')) {
    advance(2);
    while (hexValue(peek()) >= 0)
      advance();
  } else {
    while (isDigit(peek()))
      advance();
    if (peek() == '.' && isDigit(peek(1))) {
      kind = TokKind::Float;
      advance();
      while (isDigit(peek()))
        advance();
    }
    if ((peek() == 'e' || peek() == 'E') &&
        (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
      kind = TokKind::Float;
      advance(2);
      while (isDigit(peek()))
        advance();
    }
  }
  if (isIdentChar(peek()) || peek() == '.')
    return make(TokKind::Error, "invalid number", start);
  return make(kind, std::string(text_.substr(begin, pos_ - begin)), start);
}

Token Lexer::string(SourceLoc start) {
  advance(); // the opening quote
  std::string value;
  for (;;) {
    if (atEnd() || peek() == '\n')
      return make(TokKind::Error, "unterminated string", start);
    char c = peek();
    if (c == '"') {
      advance();
      return make(TokKind::String, std::move(value), start);
    }
    if (c != '\\') {
      value += c;
      advance();
      continue;
    }
    SourceLoc escape = loc();
    char e = peek(1);
    if (e == 'n' || e == 't' || e == '\\' || e == '"') {
      value += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      advance(2);
    } else if (e == 'x' && hexValue(peek(2)) >= 0 && hexValue(peek(3)) >= 0) {
      value += static_cast<char>(hexValue(peek(2)) * 16 + hexValue(peek(3)));
      advance(4);
    } else {
      return make(TokKind::Error, "unknown escape sequence (use \\n \\t \\\\ \\\" or \\xHH)",
                  escape);
    }
  }
}

Token Lexer::punct(SourceLoc start) {
  static constexpr std::array<std::string_view, 9> kTwo = {
      "//", "==", "!=", "<=", ">=", "<<", ">>", "<-", "+="};
  for (std::string_view p : kTwo)
    if (text_.substr(pos_, 2) == p) {
      advance(2);
      return make(TokKind::Punct, std::string(p), start);
    }
  char c = peek();
  if (std::string_view("()[]{}<>,:;=+-*/%&^|").find(c) == std::string_view::npos) {
    advance();
    return make(TokKind::Error, fmt::format("unexpected character {}", describeChar(c)), start);
  }
  if (c == '(' || c == '[')
    ++brackets_;
  else if ((c == ')' || c == ']') && brackets_ > 0)
    --brackets_;
  advance();
  return make(TokKind::Punct, std::string(1, c), start);
}

std::optional<uint64_t> unsignedValue(std::string_view text) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v, base);
  if (ec != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return v;
}

std::optional<Type> typeNamed(std::string_view s) {
  if (auto d = parseDType(s); d && s.front() != '"' && s.front() != '\'')
    return Type{*d, 1};
  size_t x = s.rfind('x');
  if (x == std::string_view::npos || x == 0 || x + 1 == s.size())
    return std::nullopt;
  auto lanes = unsignedValue(s.substr(x + 1));
  auto elem = parseDType(s.substr(0, x));
  if (!lanes || !elem || s.substr(x + 1).front() == '0' || *lanes > kMaxLanes)
    return std::nullopt;
  return Type{*elem, static_cast<int>(*lanes)};
}

/// `v12` -> 12.
std::optional<int> varId(std::string_view s) {
  if (s.size() < 2 || s.size() > 10 || s[0] != 'v')
    return std::nullopt;
  for (char c : s.substr(1))
    if (c < '0' || c > '9')
      return std::nullopt;
  auto v = unsignedValue(s.substr(1));
  if (!v || *v > INT_MAX)
    return std::nullopt;
  return static_cast<int>(*v);
}

std::string describe(const Token &t) {
  switch (t.kind) {
  case TokKind::End:
    return "the end of the file";
  case TokKind::Newline:
    return "the end of the line";
  case TokKind::String:
    return "a string";
  case TokKind::Param:
    return fmt::format("'%{}'", t.text.substr(0, 40));
  case TokKind::Temp:
    return fmt::format("'${}'", t.text.substr(0, 40));
  default:
    return fmt::format("'{}'", t.text.substr(0, 40));
  }
}

} // namespace tilec::thir
