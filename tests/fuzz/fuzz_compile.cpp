// libFuzzer target: the whole compile down to LLVM IR, without ptxas: parse, sema, lowering to
// thread IR, the sync and schedule passes in tilec's order (split-wgmma-chains and
// defer-wgmma-waits on), the thread IR verifier after lowering and after them, the NVPTX LLVM
// module (optimized at O3) and its textual form. Catches nothing: a std::logic_error escaping
// (a compiler bug) is a crash.
#include "FuzzCommon.h"
#include "codegen/Codegen.h"
#include "lower/Lower.h"
#include "sema/Sema.h"
#include "sync/Sync.h"
#include "syntax/Parser.h"
#include "threadir/ThreadIR.h"
#include "threadir/ThreadIRVerifier.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

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
  if (!module) {
    fuzz::renderDiagnostics(diags);
    return 0;
  }
  sema::Options so;
  so.moduleSearchPath.push_back(TILEC_FUZZ_STDLIB_DIR);
  so.stem = "fuzz";
  auto program = sema::analyze(*module, sm, diags, so);
  if (!program) {
    fuzz::renderDiagnostics(diags);
    return 0;
  }
  lower::Options lo;
  auto lowered = lower::lowerProgram(*program, diags, lo);
  if (lowered.has_value() == diags.hasErrors()) {
    std::fprintf(stderr, "lower: returned %s but reported %u error(s)\n",
                 lowered ? "a module" : "nothing", diags.numErrors());
    std::abort();
  }
  if (!lowered) {
    fuzz::renderDiagnostics(diags);
    return 0;
  }
  auto verified = [&](const char *after) {
    DiagnosticEngine check(sm);
    if (!thir::verify(lowered->module, check)) {
      std::fprintf(stderr, "thread IR after %s fails its verifier:\n%s\n%s", after,
                   check.renderAll().c_str(), thir::print(lowered->module).c_str());
      std::abort();
    }
  };
  verified("lowering");
  sync::insertBarriers(lowered->module);
  sync::elideFences(lowered->module);
  fuzz::runSchedulePasses(lowered->module);
  verified("the sync and schedule passes");
  codegen::TargetOptions to;
  llvm::LLVMContext ctx;
  auto mod = codegen::buildModule(lowered->module, to, ctx);
  if (mod) {
    std::string ll = codegen::emitLLVMText(**mod);
    (void)ll;
  }
  fuzz::renderDiagnostics(diags);
  return 0;
}
