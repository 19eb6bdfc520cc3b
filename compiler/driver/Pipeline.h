// The compiler as a listed pipeline of passes, each with one job and a name: what
// `tilec compile --print-pipeline` lists and `--dump-after=PASS` names. A pass reads what
// earlier passes recorded in the Compilation and records its own result there.
#pragma once

#include "codegen/Codegen.h"
#include "driver/Driver.h"
#include "lower/Lower.h"
#include "support/Diagnostics.h"
#include "syntax/AST.h"
#include "target/TargetInfo.h"
#include "tileir/TileIR.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tilec::driver {

/// Everything one compilation produces on its way, filled in pass by pass.
struct Compilation {
  Compilation(const DriverOptions &o, SourceManager &s, DiagnosticEngine &d, target::TargetInfo t)
      : opts(o), sm(s), diags(d), target(std::move(t)) {}
  const DriverOptions &opts;
  SourceManager &sm;
  DiagnosticEngine &diags;
  target::TargetInfo target;

  std::optional<ast::Module> ast;           // parse
  std::optional<tile::Program> program;     // sema
  lower::ProgramPlan plan;                  // infer-layouts, plan-pipelines, plan-shared
  std::optional<lower::Lowered> lowered;    // lower-to-thread-ir
  llvm::LLVMContext llvmContext;            //
  std::unique_ptr<llvm::Module> llvmModule; // build-llvm, optimize-llvm
  std::string assembly;                     // emit-asm: PTX, or AMDGCN assembly
  std::optional<std::string> binary;        // assemble: a cubin or an AMD code object (nullopt:
                                            // not run, or no ptxas)
  /// With --time-passes: the wall time of each step that ran, in order, in milliseconds.
  std::vector<std::pair<std::string, double>> stepTimes;

  codegen::TargetOptions codegenOptions() const;
  /// Whether the outputs asked for need the assembly text (PTX, or AMDGCN assembly), and the
  /// machine code (a cubin, or an AMD code object).
  bool wantsAssembly() const;
  bool wantsBinary() const;
};

struct Pass {
  std::string_view name;
  std::string_view summary; // one line for --print-pipeline
  /// Runs the pass; false after reporting an error.
  bool (*run)(Compilation &);
  /// The IR after the pass, for --dump-after (only called after run succeeded).
  std::string (*dump)(const Compilation &);
};

/// Every pass of `tilec compile`, in order; `tilec check` runs the first two.
const std::vector<Pass> &compilePipeline();
inline constexpr size_t kCheckPasses = 2;

/// The pass `--dump-after=NAME` means: a pass name, or one of the older names `ast`, `tile-ir`
/// and `thread-ir`. Empty when NAME is neither.
std::string_view passForDumpName(std::string_view name);
/// Every name --dump-after accepts (pass names, then the older names).
std::vector<std::string> dumpNames();

/// The --print-pipeline text: one line per pass.
std::string printPipeline();

/// Runs passes [from, count) of compilePipeline() over `c`, printing the IR after the pass
/// named by c.opts.dumpAfter to `out`. Returns false as soon as a pass reports an error.
bool runPipeline(Compilation &c, size_t from, size_t count, std::ostream &out);

/// Runs `step` and, with --time-passes, records its wall time under `name` in c.stepTimes.
template <typename F> auto timeStep(Compilation &c, std::string_view name, F &&step) {
  if (!c.opts.timePasses)
    return step();
  auto start = std::chrono::steady_clock::now();
  // Recorded also when the step fails, so the table shows where a failed compile stopped.
  struct Record {
    Compilation &c;
    std::string_view name;
    std::chrono::steady_clock::time_point start;
    ~Record() {
      std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
      c.stepTimes.emplace_back(std::string(name), ms.count());
    }
  } record{c, name, start};
  return step();
}

/// The --time-passes table: one aligned line per step (milliseconds and share of the total),
/// then the total.
std::string formatStepTimes(const std::vector<std::pair<std::string, double>> &times);

/// Compiles opts.input (a .tile source) for the single target opts.arch without writing any
/// output (for `tilec bench` and `tilec tune`), printing diagnostics as `tilec compile` does
/// (-w, -Werror, --color), then calls `use` with the finished compilation. Returns 1 after an
/// error, else what `use` returns.
/// With `frontEndOnly`, only the passes `tilec check` runs (parse and sema: c.program is set,
/// nothing after it).
int compileAndUse(const DriverOptions &opts, std::ostream &out, std::ostream &err,
                  const std::function<int(Compilation &)> &use, bool frontEndOnly = false);

/// Whether `path` names thread IR text (.thir), which enters the pipeline after
/// lower-to-thread-ir (docs/thread-ir.md).
bool isThreadIRInput(const std::string &path);
/// The index of the first pass a thread IR input runs (insert-barriers).
size_t threadIRFirstPass();
/// Parses and verifies thread IR text into c.lowered, standing in for the passes before
/// threadIRFirstPass(); prints it for --dump-after=lower-to-thread-ir. False after an error.
bool loadThreadIR(Compilation &c, std::ostream &out);

} // namespace tilec::driver
