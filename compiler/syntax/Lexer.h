// The hand-written, indentation-aware lexer of the .tile language (Python's lexical rules).
#pragma once

#include "support/Diagnostics.h"
#include "syntax/Token.h"

#include <deque>
#include <string_view>
#include <vector>

namespace tilec {

/// Turns one source buffer into tokens on demand. Layout becomes Newline/Indent/Dedent tokens;
/// inside brackets and after a trailing backslash, line breaks are ignored. Lexical errors are
/// reported to `diags` and lexing goes on, so the parser sees a best-effort stream. The stream
/// always ends with Newline (when the last line had tokens), the Dedents that close every open
/// block, then Eof, which `next()` keeps returning.
class Lexer {
public:
  Lexer(const SourceManager &sm, uint32_t file, DiagnosticEngine &diags);

  Token next();

  /// Brackets deeper than this are still matched but not checked for the right closing kind,
  /// so that pathological inputs cost bounded memory. The parser rejects them anyway.
  static constexpr size_t kMaxTrackedBrackets = 256;

private:
  struct OpenBracket {
    char ch;
    SourceLoc loc;
  };

  void lexMore();
  void handleLineStart();
  void handleEof();
  void lexNumber();
  void lexString();
  void lexIdentifier();
  void lexOperator();
  void lexUnexpected();
  void openBracket(TokenKind kind, char ch);
  /// Returns false when the bracket must be dropped (nothing open).
  bool closeBracket(TokenKind &kind, char ch);

  void push(TokenKind kind, size_t start);
  void pushLayout(TokenKind kind, SourceLoc loc);
  void startNewLine(size_t nextLineStart);

  char peekChar(size_t ahead = 0) const {
    return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
  }
  bool atEnd(size_t ahead = 0) const { return pos_ + ahead >= src_.size(); }
  SourceLoc locAt(size_t offset) const;

  uint32_t file_;
  std::string_view src_;
  DiagnosticEngine &diags_;

  size_t pos_ = 0;
  uint32_t line_ = 1;
  size_t lineStart_ = 0;
  bool atLineStart_ = true;
  bool lineHasTokens_ = false;
  bool finished_ = false;

  std::vector<uint32_t> indents_{0};
  std::vector<OpenBracket> brackets_;
  size_t untrackedBrackets_ = 0;
  std::deque<Token> pending_;
};

} // namespace tilec
