// libFuzzer target: the lexer alone. Lexes the input to Eof; the stream must end (the lexer
// promises Eof after a bounded number of tokens) and diagnostics must render.
#include "FuzzCommon.h"
#include "syntax/Lexer.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace tilec;
  SourceManager sm;
  DiagnosticEngine diags(sm);
  uint32_t file = fuzz::addInput(sm, data, size);
  Lexer lexer(sm, file, diags);
  // Every byte makes at most a few tokens (one Newline, Dedents for the open blocks); a stream
  // longer than this means the lexer stopped making progress.
  const size_t limit = 4 * size + 64;
  size_t n = 0;
  for (;;) {
    Token t = lexer.next();
    if (t.is(TokenKind::Eof))
      break;
    if (++n > limit) {
      std::fprintf(stderr, "lexer: more than %zu tokens for %zu bytes: no progress\n", limit, size);
      std::abort();
    }
  }
  // Eof is sticky.
  if (!lexer.next().is(TokenKind::Eof)) {
    std::fprintf(stderr, "lexer: a token after Eof\n");
    std::abort();
  }
  fuzz::renderDiagnostics(diags);
  return 0;
}
