// Tokens of the thread IR text form (internal to the parser). The lexer works on demand so that
// a large input never becomes a large token array.
#pragma once

#include "support/Diagnostics.h"
#include "threadir/ThreadIR.h"

#include <cstdint>
#include <optional>

#include <string>
#include <string_view>

namespace tilec::thir {

enum class TokKind {
  End,
  Newline, // outside brackets; inside ( and [ a line break is whitespace
  Ident,   // letters, digits, '_', and '.' between them: `threadIdx.x`, `cp.async.commit`
  Int,     // decimal, or hexadecimal with 0x
  Float,   // digits with a '.' or an exponent
  String,  // text is the decoded value
  Param,   // `%name` or `%"name"`: text is the name
  Temp,    // `$N`: text is the digits
  Punct,   // operators and brackets: text is the spelling
  Error,   // text is the message
};

struct Token {
  TokKind kind = TokKind::End;
  std::string text;
  SourceLoc loc;

  bool is(TokKind k, std::string_view t) const { return kind == k && text == t; }
  bool isPunct(std::string_view t) const { return is(TokKind::Punct, t); }
  bool isIdent(std::string_view t) const { return is(TokKind::Ident, t); }
};

class Lexer {
public:
  Lexer(std::string_view text, uint32_t file) : text_(text), file_(file) {}
  /// The next token; End forever after the end of the input, Error at a bad character.
  Token next();

private:
  SourceLoc loc() const { return {file_, line_, col_}; }
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool atEnd() const { return pos_ >= text_.size(); }
  void advance(size_t n = 1);
  Token make(TokKind kind, std::string text, SourceLoc loc) const {
    return Token{kind, std::move(text), loc};
  }
  Token identifier(SourceLoc start);
  Token number(SourceLoc start);
  Token string(SourceLoc start);
  Token punct(SourceLoc start);

  std::string_view text_;
  uint32_t file_;
  size_t pos_ = 0;
  uint32_t line_ = 1, col_ = 1;
  int brackets_ = 0; // open ( and [
};

/// The value of an Int token's text (decimal, or hexadecimal with 0x).
std::optional<uint64_t> unsignedValue(std::string_view text);
/// `float32x4` -> {Float32, 4}; nullopt for other words and lane counts outside 1..kMaxLanes.
std::optional<Type> typeNamed(std::string_view s);
/// `v12` -> 12.
std::optional<int> varId(std::string_view s);
/// How a diagnostic names the token: `'%A'`, `the end of the line`, ...
std::string describe(const Token &t);

} // namespace tilec::thir
