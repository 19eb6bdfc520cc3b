// libFuzzer target: parse + semantic analysis (imports resolve against the stdlib of the source
// tree), and the tile IR printer over what analyzes.
#include "FuzzCommon.h"
#include "sema/Sema.h"
#include "syntax/Parser.h"
#include "tileir/TileIR.h"

#include <cstdio>
#include <cstdlib>

#ifndef TILEC_FUZZ_STDLIB_DIR
#error "TILEC_FUZZ_STDLIB_DIR must name the stdlib directory"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace tilec;
  SourceManager sm;
  DiagnosticEngine diags(sm);
  uint32_t file = fuzz::addInput(sm, data, size);
  auto module = parseModule(sm, file, diags);
  if (module) {
    sema::Options opts;
    opts.moduleSearchPath.push_back(TILEC_FUZZ_STDLIB_DIR);
    opts.stem = "fuzz";
    auto program = sema::analyze(*module, sm, diags, opts);
    if (program.has_value() == diags.hasErrors()) {
      std::fprintf(stderr, "sema: returned %s but reported %u error(s)\n",
                   program ? "a program" : "nothing", diags.numErrors());
      std::abort();
    }
    if (program) {
      std::string text = tile::print(*program);
      (void)text;
    }
  }
  fuzz::renderDiagnostics(diags);
  return 0;
}
