#include "syntax/Lexer.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace tilec {

const char *tokenKindName(TokenKind kind) {
  switch (kind) {
  case TokenKind::Eof:
    return "end of file";
  case TokenKind::Newline:
    return "end of line";
  case TokenKind::Indent:
    return "indent";
  case TokenKind::Dedent:
    return "dedent";
  case TokenKind::Identifier:
    return "identifier";
  case TokenKind::IntLiteral:
    return "integer literal";
  case TokenKind::FloatLiteral:
    return "float literal";
  case TokenKind::StringLiteral:
    return "string literal";
  case TokenKind::KwDef:
    return "'def'";
  case TokenKind::KwWith:
    return "'with'";
  case TokenKind::KwAs:
    return "'as'";
  case TokenKind::KwFor:
    return "'for'";
  case TokenKind::KwIn:
    return "'in'";
  case TokenKind::KwIf:
    return "'if'";
  case TokenKind::KwElif:
    return "'elif'";
  case TokenKind::KwElse:
    return "'else'";
  case TokenKind::KwAnd:
    return "'and'";
  case TokenKind::KwOr:
    return "'or'";
  case TokenKind::KwNot:
    return "'not'";
  case TokenKind::KwPass:
    return "'pass'";
  case TokenKind::KwImport:
    return "'import'";
  case TokenKind::KwFrom:
    return "'from'";
  case TokenKind::KwConst:
    return "'const'";
  case TokenKind::KwReturn:
    return "'return'";
  case TokenKind::KwTrue:
    return "'True'";
  case TokenKind::KwFalse:
    return "'False'";
  case TokenKind::Plus:
    return "'+'";
  case TokenKind::Minus:
    return "'-'";
  case TokenKind::Star:
    return "'*'";
  case TokenKind::Slash:
    return "'/'";
  case TokenKind::SlashSlash:
    return "'//'";
  case TokenKind::Percent:
    return "'%'";
  case TokenKind::StarStar:
    return "'**'";
  case TokenKind::EqEq:
    return "'=='";
  case TokenKind::NotEq:
    return "'!='";
  case TokenKind::Less:
    return "'<'";
  case TokenKind::LessEq:
    return "'<='";
  case TokenKind::Greater:
    return "'>'";
  case TokenKind::GreaterEq:
    return "'>='";
  case TokenKind::Assign:
    return "'='";
  case TokenKind::PlusAssign:
    return "'+='";
  case TokenKind::MinusAssign:
    return "'-='";
  case TokenKind::StarAssign:
    return "'*='";
  case TokenKind::SlashAssign:
    return "'/='";
  case TokenKind::SlashSlashAssign:
    return "'//='";
  case TokenKind::PercentAssign:
    return "'%='";
  case TokenKind::StarStarAssign:
    return "'**='";
  case TokenKind::Amp:
    return "'&'";
  case TokenKind::Pipe:
    return "'|'";
  case TokenKind::Caret:
    return "'^'";
  case TokenKind::Tilde:
    return "'~'";
  case TokenKind::LShift:
    return "'<<'";
  case TokenKind::RShift:
    return "'>>'";
  case TokenKind::AmpAssign:
    return "'&='";
  case TokenKind::PipeAssign:
    return "'|='";
  case TokenKind::CaretAssign:
    return "'^='";
  case TokenKind::LShiftAssign:
    return "'<<='";
  case TokenKind::RShiftAssign:
    return "'>>='";
  case TokenKind::LParen:
    return "'('";
  case TokenKind::RParen:
    return "')'";
  case TokenKind::LBracket:
    return "'['";
  case TokenKind::RBracket:
    return "']'";
  case TokenKind::LBrace:
    return "'{'";
  case TokenKind::RBrace:
    return "'}'";
  case TokenKind::Comma:
    return "','";
  case TokenKind::Colon:
    return "':'";
  case TokenKind::Dot:
    return "'.'";
  case TokenKind::At:
    return "'@'";
  case TokenKind::Arrow:
    return "'->'";
  }
  return "token";
}

namespace {

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isHexDigit(char c) { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isIdentChar(char c) { return isIdentStart(c) || isDigit(c); }

TokenKind keywordKind(std::string_view s) {
  static constexpr std::pair<std::string_view, TokenKind> kKeywords[] = {
      {"def", TokenKind::KwDef},       {"with", TokenKind::KwWith}, {"as", TokenKind::KwAs},
      {"for", TokenKind::KwFor},       {"in", TokenKind::KwIn},     {"if", TokenKind::KwIf},
      {"elif", TokenKind::KwElif},     {"else", TokenKind::KwElse}, {"and", TokenKind::KwAnd},
      {"or", TokenKind::KwOr},         {"not", TokenKind::KwNot},   {"pass", TokenKind::KwPass},
      {"import", TokenKind::KwImport}, {"from", TokenKind::KwFrom}, {"const", TokenKind::KwConst},
      {"return", TokenKind::KwReturn}, {"True", TokenKind::KwTrue}, {"False", TokenKind::KwFalse},
  };
  for (const auto &[word, kind] : kKeywords)
    if (word == s)
      return kind;
  return TokenKind::Identifier;
}

char closerFor(char open) { return open == '(' ? ')' : open == '[' ? ']' : '}'; }
TokenKind closerKind(char open) {
  return open == '(' ? TokenKind::RParen : open == '[' ? TokenKind::RBracket : TokenKind::RBrace;
}

/// Length of the well-formed UTF-8 sequence starting at `s[0]`, or 0 if it is not one.
size_t utf8Length(std::string_view s) {
  auto b = static_cast<unsigned char>(s[0]);
  size_t n = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b < 0xE0 ? 2 : 0;
  if (n == 0 || s.size() < n)
    return 0;
  for (size_t i = 1; i < n; ++i)
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80)
      return 0;
  return n;
}

} // namespace

Lexer::Lexer(const SourceManager &sm, uint32_t file, DiagnosticEngine &diags)
    : file_(file), src_(sm.text(file)), diags_(diags) {}

SourceLoc Lexer::locAt(size_t offset) const {
  return SourceLoc{file_, line_, static_cast<uint32_t>(offset - lineStart_ + 1)};
}

Token Lexer::next() {
  while (pending_.empty())
    lexMore();
  Token t = std::move(pending_.front());
  // Eof is sticky: the parser may ask again after the end.
  if (t.kind != TokenKind::Eof || pending_.size() > 1)
    pending_.pop_front();
  return t;
}

void Lexer::push(TokenKind kind, size_t start) {
  Token t;
  t.kind = kind;
  t.loc = locAt(start);
  t.endLoc = locAt(pos_);
  t.text = src_.substr(start, pos_ - start);
  pending_.push_back(std::move(t));
  lineHasTokens_ = true;
}

void Lexer::pushLayout(TokenKind kind, SourceLoc loc) {
  Token t;
  t.kind = kind;
  t.loc = loc;
  t.endLoc = loc;
  pending_.push_back(std::move(t));
}

void Lexer::startNewLine(size_t nextLineStart) {
  ++line_;
  lineStart_ = nextLineStart;
  pos_ = nextLineStart;
}

void Lexer::lexMore() {
  if (finished_) {
    pushLayout(TokenKind::Eof, locAt(pos_));
    return;
  }
  if (atLineStart_ && brackets_.empty() && untrackedBrackets_ == 0) {
    handleLineStart();
    if (!pending_.empty())
      return;
  }
  // Skip inline whitespace and comments.
  for (;;) {
    char c = peekChar();
    if (!atEnd() && (c == ' ' || c == '\t' || c == '\r' || c == '\f')) {
      ++pos_;
    } else if (!atEnd() && c == '#') {
      while (!atEnd() && peekChar() != '\n')
        ++pos_;
    } else {
      break;
    }
  }
  if (atEnd()) {
    handleEof();
    return;
  }
  char c = peekChar();
  if (c == '\n') {
    SourceLoc loc = locAt(pos_);
    startNewLine(pos_ + 1);
    if (!brackets_.empty() || untrackedBrackets_ != 0)
      return; // implicit line joining
    if (lineHasTokens_)
      pushLayout(TokenKind::Newline, loc);
    lineHasTokens_ = false;
    atLineStart_ = true;
    return;
  }
  if (c == '\\') {
    size_t after = pos_ + 1;
    if (after < src_.size() && src_[after] == '\r')
      ++after;
    if (after < src_.size() && src_[after] == '\n') {
      startNewLine(after + 1); // explicit line joining: indentation of the next line is ignored
      return;
    }
    if (after >= src_.size()) {
      diags_.error(locAt(pos_), "unexpected end of file after line continuation character");
    } else {
      diags_.error(locAt(pos_), "unexpected character after line continuation character");
    }
    ++pos_;
    return;
  }
  if (isDigit(c) || (c == '.' && isDigit(peekChar(1))))
    lexNumber();
  else if (c == '"' || c == '\'')
    lexString();
  else if (isIdentStart(c))
    lexIdentifier();
  else
    lexOperator();
}

void Lexer::handleLineStart() {
  uint32_t width = 0;
  size_t p = pos_;
  // Where the line's first tab is, or npos (a plain index: GCC 12 reports an std::optional here
  // as maybe used uninitialized).
  constexpr size_t kNoTab = std::string::npos;
  size_t firstTab = kNoTab;
  for (;;) {
    width = 0;
    firstTab = kNoTab;
    p = pos_;
    while (p < src_.size()) {
      char c = src_[p];
      if (c == ' ') {
        ++width;
      } else if (c == '\t') {
        if (firstTab == kNoTab)
          firstTab = p;
        width = (width / 8 + 1) * 8;
      } else if (c != '\r' && c != '\f') {
        break;
      }
      ++p;
    }
    if (p < src_.size() && src_[p] == '#') {
      while (p < src_.size() && src_[p] != '\n')
        ++p;
    }
    if (p < src_.size() && src_[p] == '\n') {
      startNewLine(p + 1); // blank or comment-only line: no layout tokens
      continue;
    }
    break;
  }
  pos_ = p;
  atLineStart_ = false;
  if (p >= src_.size())
    return; // end of file; handleEof closes the blocks
  if (firstTab != kNoTab)
    diags_.error(locAt(firstTab), "tabs are not allowed in indentation; use spaces");
  SourceLoc loc = locAt(p);
  if (width > indents_.back()) {
    indents_.push_back(width);
    pushLayout(TokenKind::Indent, loc);
    return;
  }
  while (width < indents_.back()) {
    indents_.pop_back();
    pushLayout(TokenKind::Dedent, loc);
  }
  if (width != indents_.back())
    diags_.error(loc, "unindent does not match any outer indentation level");
}

void Lexer::handleEof() {
  SourceLoc loc = locAt(pos_);
  if (!brackets_.empty()) {
    // The outermost one is what swallowed the rest of the file.
    const OpenBracket &b = brackets_.front();
    diags_.error(b.loc, fmt::format("'{}' was never closed", b.ch));
  } else if (untrackedBrackets_ != 0) {
    diags_.error(loc, "unexpected end of file inside brackets");
  }
  brackets_.clear();
  untrackedBrackets_ = 0;
  if (lineHasTokens_)
    pushLayout(TokenKind::Newline, loc);
  lineHasTokens_ = false;
  for (size_t i = 1; i < indents_.size(); ++i)
    pushLayout(TokenKind::Dedent, loc);
  indents_.resize(1);
  pushLayout(TokenKind::Eof, loc);
  finished_ = true;
}

void Lexer::lexNumber() {
  size_t start = pos_;
  SourceLoc loc = locAt(start);
  bool malformed = false;
  // Underscores may only separate digits; the cleaned spelling is what gets converted.
  std::string digits;
  // `prevDigit` says whether the character before a `_` was a digit of this group.
  auto scanDigits = [&](auto isValid, bool prevDigit) {
    while (!atEnd() && (isValid(peekChar()) || peekChar() == '_')) {
      if (peekChar() == '_') {
        if (!prevDigit || !isValid(peekChar(1)))
          malformed = true;
        prevDigit = false;
      } else {
        digits += peekChar();
        prevDigit = true;
      }
      ++pos_;
    }
  };

  if (peekChar() == '0' && (peekChar(1) == 'x' || peekChar(1) == 'X')) {
    pos_ += 2;
    scanDigits(isHexDigit, /*prevDigit=*/true); // `0x_80` is valid Python
    bool trailingIdent = !atEnd() && isIdentChar(peekChar());
    while (!atEnd() && isIdentChar(peekChar()))
      ++pos_;
    push(TokenKind::IntLiteral, start);
    if (digits.empty() || malformed || trailingIdent) {
      diags_.error(loc, "invalid hexadecimal literal");
      return;
    }
    uint64_t value = 0;
    for (char d : digits) {
      uint64_t v = isDigit(d) ? d - '0' : (d | 0x20) - 'a' + 10;
      if (value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - v) / 16) {
        diags_.error(loc, "integer literal is too large");
        return;
      }
      value = value * 16 + v;
    }
    pending_.back().intValue = static_cast<int64_t>(value);
    return;
  }

  bool isFloat = false;
  scanDigits(isDigit, false);
  if (peekChar() == '.' && !atEnd()) {
    isFloat = true;
    digits += '.';
    ++pos_;
    scanDigits(isDigit, false);
  }
  if ((peekChar() == 'e' || peekChar() == 'E') &&
      (isDigit(peekChar(1)) ||
       ((peekChar(1) == '+' || peekChar(1) == '-') && isDigit(peekChar(2))))) {
    isFloat = true;
    digits += 'e';
    ++pos_;
    if (peekChar() == '+' || peekChar() == '-') {
      digits += peekChar();
      ++pos_;
    }
    scanDigits(isDigit, false);
  }
  if (!atEnd() && isIdentChar(peekChar())) {
    malformed = true;
    while (!atEnd() && isIdentChar(peekChar()))
      ++pos_;
  }
  push(isFloat ? TokenKind::FloatLiteral : TokenKind::IntLiteral, start);
  if (malformed) {
    diags_.error(loc, "invalid decimal literal");
    return;
  }
  if (isFloat) {
    errno = 0;
    double value = std::strtod(digits.c_str(), nullptr);
    if (errno == ERANGE && std::isinf(value)) {
      diags_.error(loc, "float literal is too large");
      value = 0.0;
    }
    pending_.back().floatValue = value;
    return;
  }
  int64_t value = 0;
  for (char d : digits) {
    int v = d - '0';
    if (value > (std::numeric_limits<int64_t>::max() - v) / 10) {
      diags_.error(loc, "integer literal is too large");
      return;
    }
    value = value * 10 + v;
  }
  pending_.back().intValue = value;
}

void Lexer::lexString() {
  size_t start = pos_;
  char quote = peekChar();
  ++pos_;
  std::string value;
  bool terminated = false;
  while (!atEnd()) {
    char c = peekChar();
    if (c == '\n')
      break;
    if (c == quote) {
      ++pos_;
      terminated = true;
      break;
    }
    if (c == '\\' && !atEnd(1) && peekChar(1) != '\n') {
      char e = peekChar(1);
      pos_ += 2;
      switch (e) {
      case 'n':
        value += '\n';
        break;
      case 't':
        value += '\t';
        break;
      case 'r':
        value += '\r';
        break;
      case '0':
        value += '\0';
        break;
      case '\\':
      case '\'':
      case '"':
        value += e;
        break;
      default:
        // Like Python, an unknown escape keeps its backslash.
        value += '\\';
        value += e;
        break;
      }
      continue;
    }
    value += c;
    ++pos_;
  }
  push(TokenKind::StringLiteral, start);
  pending_.back().stringValue = std::move(value);
  if (!terminated)
    diags_.error(locAt(start), "unterminated string literal");
}

void Lexer::lexIdentifier() {
  size_t start = pos_;
  while (!atEnd() && isIdentChar(peekChar()))
    ++pos_;
  push(keywordKind(src_.substr(start, pos_ - start)), start);
}

void Lexer::openBracket(TokenKind kind, char ch) {
  if (brackets_.size() < kMaxTrackedBrackets)
    brackets_.push_back({ch, locAt(pos_)});
  else
    ++untrackedBrackets_;
  ++pos_;
  push(kind, pos_ - 1);
}

bool Lexer::closeBracket(TokenKind &kind, char ch) {
  if (untrackedBrackets_ != 0) {
    --untrackedBrackets_;
    return true;
  }
  if (brackets_.empty()) {
    diags_.error(locAt(pos_), fmt::format("unmatched '{}'", ch));
    return false;
  }
  OpenBracket open = brackets_.back();
  brackets_.pop_back();
  if (closerFor(open.ch) != ch) {
    diags_.error(locAt(pos_),
                 fmt::format("closing '{}' does not match opening '{}' at line {}, column {}", ch,
                             open.ch, open.loc.line, open.loc.col));
    // Treat it as the expected closer so that the parser does not report the same mistake.
    kind = closerKind(open.ch);
  }
  return true;
}

void Lexer::lexOperator() {
  size_t start = pos_;
  char c = peekChar();
  char c1 = peekChar(1);
  char c2 = peekChar(2);
  auto emit = [&](TokenKind kind, size_t len) {
    pos_ += len;
    push(kind, start);
  };
  switch (c) {
  case '(':
    return openBracket(TokenKind::LParen, c);
  case '[':
    return openBracket(TokenKind::LBracket, c);
  case '{':
    return openBracket(TokenKind::LBrace, c);
  case ')':
  case ']':
  case '}': {
    TokenKind kind = c == ')'   ? TokenKind::RParen
                     : c == ']' ? TokenKind::RBracket
                                : TokenKind::RBrace;
    if (closeBracket(kind, c))
      emit(kind, 1);
    else
      ++pos_;
    return;
  }
  case '+':
    return c1 == '=' ? emit(TokenKind::PlusAssign, 2) : emit(TokenKind::Plus, 1);
  case '-':
    if (c1 == '>')
      return emit(TokenKind::Arrow, 2);
    return c1 == '=' ? emit(TokenKind::MinusAssign, 2) : emit(TokenKind::Minus, 1);
  case '*':
    if (c1 == '*')
      return c2 == '=' ? emit(TokenKind::StarStarAssign, 3) : emit(TokenKind::StarStar, 2);
    return c1 == '=' ? emit(TokenKind::StarAssign, 2) : emit(TokenKind::Star, 1);
  case '/':
    if (c1 == '/')
      return c2 == '=' ? emit(TokenKind::SlashSlashAssign, 3) : emit(TokenKind::SlashSlash, 2);
    return c1 == '=' ? emit(TokenKind::SlashAssign, 2) : emit(TokenKind::Slash, 1);
  case '%':
    return c1 == '=' ? emit(TokenKind::PercentAssign, 2) : emit(TokenKind::Percent, 1);
  case '=':
    return c1 == '=' ? emit(TokenKind::EqEq, 2) : emit(TokenKind::Assign, 1);
  case '!':
    if (c1 == '=')
      return emit(TokenKind::NotEq, 2);
    break;
  case '<':
    if (c1 == '<')
      return c2 == '=' ? emit(TokenKind::LShiftAssign, 3) : emit(TokenKind::LShift, 2);
    return c1 == '=' ? emit(TokenKind::LessEq, 2) : emit(TokenKind::Less, 1);
  case '>':
    if (c1 == '>')
      return c2 == '=' ? emit(TokenKind::RShiftAssign, 3) : emit(TokenKind::RShift, 2);
    return c1 == '=' ? emit(TokenKind::GreaterEq, 2) : emit(TokenKind::Greater, 1);
  case '&':
    return c1 == '=' ? emit(TokenKind::AmpAssign, 2) : emit(TokenKind::Amp, 1);
  case '|':
    return c1 == '=' ? emit(TokenKind::PipeAssign, 2) : emit(TokenKind::Pipe, 1);
  case '^':
    return c1 == '=' ? emit(TokenKind::CaretAssign, 2) : emit(TokenKind::Caret, 1);
  case '~':
    return emit(TokenKind::Tilde, 1);
  case ',':
    return emit(TokenKind::Comma, 1);
  case ':':
    return emit(TokenKind::Colon, 1);
  case '.':
    return emit(TokenKind::Dot, 1);
  case '@':
    return emit(TokenKind::At, 1);
  default:
    break;
  }
  lexUnexpected();
}

void Lexer::lexUnexpected() {
  SourceLoc loc = locAt(pos_);
  auto b = static_cast<unsigned char>(peekChar());
  if (b >= 0x20 && b < 0x7F) {
    diags_.error(loc, fmt::format("unexpected character '{}'", static_cast<char>(b)));
    ++pos_;
    return;
  }
  // A well-formed UTF-8 character is quoted as itself, anything else byte by byte.
  if (size_t n = b >= 0x80 ? utf8Length(src_.substr(pos_)) : 0) {
    diags_.error(loc, fmt::format("unexpected character '{}'", src_.substr(pos_, n)));
    pos_ += n;
    return;
  }
  diags_.error(loc, fmt::format("unexpected character '\\x{:02X}'", b));
  ++pos_;
}

} // namespace tilec
