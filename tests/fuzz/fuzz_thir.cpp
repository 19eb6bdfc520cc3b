// libFuzzer target: thread IR text (`tilec compile X.thir`): parseThreadIR with its verifier;
// on what it accepts, print -> parse -> print must be the identity, the schedule passes (those
// off by default included) must leave IR the verifier accepts, and codegen (O3) must not find
// malformed IR. Catches nothing: a std::logic_error escaping (a compiler bug) is a crash.
#include "FuzzCommon.h"
#include "codegen/Codegen.h"
#include "threadir/ThreadIRParser.h"
#include "threadir/ThreadIRVerifier.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace tilec;
  SourceManager sm;
  DiagnosticEngine diags(sm);
  uint32_t file = fuzz::addInput(sm, data, size);
  auto module = thir::parseThreadIR(sm, file, diags);
  if (module.has_value() == diags.hasErrors()) {
    std::fprintf(stderr, "parseThreadIR: returned %s but reported %u error(s)\n",
                 module ? "a module" : "nothing", diags.numErrors());
    std::abort();
  }
  if (module) {
    std::string text = thir::print(*module);
    SourceManager sm2;
    DiagnosticEngine diags2(sm2);
    auto again = thir::parseThreadIR(sm2, sm2.addBuffer("printed.thir", text), diags2);
    if (!again || thir::print(*again) != text) {
      std::fprintf(stderr, "print -> parse -> print is not the identity:\n%s\n%s", text.c_str(),
                   diags2.renderAll().c_str());
      std::abort();
    }
    fuzz::runSchedulePasses(*module);
    DiagnosticEngine diags3(sm);
    if (!thir::verify(*module, diags3)) {
      std::fprintf(stderr, "the schedule passes broke the IR:\n%s\n%s", diags3.renderAll().c_str(),
                   thir::print(*module).c_str());
      std::abort();
    }
    codegen::TargetOptions to;
    llvm::LLVMContext ctx;
    auto mod = codegen::buildModule(*module, to, ctx);
    if (mod) {
      std::string ll = codegen::emitLLVMText(**mod);
      (void)ll;
    }
  }
  fuzz::renderDiagnostics(diags);
  return 0;
}
