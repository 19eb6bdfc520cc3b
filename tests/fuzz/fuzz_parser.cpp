// libFuzzer target: lexer + parser, and the AST printer over what parses.
#include "FuzzCommon.h"
#include "syntax/ASTPrinter.h"
#include "syntax/Parser.h"

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace tilec;
  SourceManager sm;
  DiagnosticEngine diags(sm);
  uint32_t file = fuzz::addInput(sm, data, size);
  auto module = parseModule(sm, file, diags);
  if (module.has_value() == diags.hasErrors()) {
    std::fprintf(stderr, "parser: returned %s but reported %u error(s)\n",
                 module ? "a module" : "nothing", diags.numErrors());
    std::abort();
  }
  if (module) {
    std::string text = printAST(*module);
    (void)text;
  }
  fuzz::renderDiagnostics(diags);
  return 0;
}
