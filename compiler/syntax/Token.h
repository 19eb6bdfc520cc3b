// Tokens of the .tile language, as produced by the indentation-aware Lexer.
#pragma once

#include "support/Diagnostics.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace tilec {

enum class TokenKind : uint8_t {
  Eof,
  Newline,
  Indent,
  Dedent,
  Identifier,
  IntLiteral,
  FloatLiteral,
  StringLiteral,
  // Keywords.
  KwDef,
  KwWith,
  KwAs,
  KwFor,
  KwIn,
  KwIf,
  KwElif,
  KwElse,
  KwAnd,
  KwOr,
  KwNot,
  KwPass,
  KwImport,
  KwFrom,
  KwConst,
  KwReturn,
  KwTrue,
  KwFalse,
  // Operators and punctuation.
  Plus,
  Minus,
  Star,
  Slash,
  SlashSlash,
  Percent,
  StarStar,
  EqEq,
  NotEq,
  Less,
  LessEq,
  Greater,
  GreaterEq,
  Assign,
  PlusAssign,
  MinusAssign,
  StarAssign,
  SlashAssign,
  SlashSlashAssign,
  PercentAssign,
  StarStarAssign,
  Amp,
  Pipe,
  Caret,
  Tilde,
  LShift,
  RShift,
  AmpAssign,
  PipeAssign,
  CaretAssign,
  LShiftAssign,
  RShiftAssign,
  LParen,
  RParen,
  LBracket,
  RBracket,
  LBrace,
  RBrace,
  Comma,
  Colon,
  Dot,
  At,
  Arrow,
};

struct Token {
  TokenKind kind = TokenKind::Eof;
  /// Where the token starts.
  SourceLoc loc;
  /// Just past the token's last character (same line as `loc`, except for Newline/Dedent).
  SourceLoc endLoc;
  /// The token's spelling in the source buffer (empty for Newline/Indent/Dedent/Eof).
  std::string_view text;
  int64_t intValue = 0;
  double floatValue = 0.0;
  /// The decoded value of a string literal (escapes resolved).
  std::string stringValue;

  bool is(TokenKind k) const { return kind == k; }
};

/// A short human-readable description for diagnostics: `'('`, `identifier`, `end of file`.
const char *tokenKindName(TokenKind kind);

} // namespace tilec
