#include "driver/Pipeline.h"

#include "driver/Toolchain.h"
#include "lower/Plan.h"
#include "schedule/Schedule.h"
#include "sema/Sema.h"
#include "sync/Sync.h"
#include "syntax/ASTPrinter.h"
#include "syntax/Parser.h"
#include "threadir/ThreadIR.h"
#include "threadir/ThreadIRParser.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>

namespace tilec::driver {

namespace fs = std::filesystem;

codegen::TargetOptions Compilation::codegenOptions() const {
  codegen::TargetOptions to;
  to.target = target;
  to.preciseDiv = opts.preciseDiv;
  to.fastMath = opts.fastMath;
  to.fuseMultiplyAdd = !opts.noFma;
  return to;
}

bool Compilation::wantsAssembly() const {
  if (target.isAmd())
    return opts.emit.count("asm") > 0;
  return opts.emit.count("cubin") || opts.emit.count("header") || opts.emit.count("ptx");
}

bool Compilation::wantsBinary() const {
  return opts.emit.count("cubin") || (opts.emit.count("header") && opts.embed == "cubin");
}

namespace {

std::optional<uint32_t> readInput(Compilation &c, const std::string &path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    c.diags.error({}, fs::exists(path, ec) ? fmt::format("'{}' is not a regular file", path)
                                           : fmt::format("cannot open '{}': no such file", path));
    return std::nullopt;
  }
  auto size = fs::file_size(path, ec);
  if (ec || size > kMaxSourceFileSize) {
    c.diags.error({},
                  fmt::format("'{}' is too large (limit {} MiB)", path, kMaxSourceFileSize >> 20));
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) {
    c.diags.error({}, fmt::format("cannot read '{}'", path));
    return std::nullopt;
  }
  return c.sm.addBuffer(path, text.str());
}

bool runParse(Compilation &c) {
  auto file = readInput(c, c.opts.input);
  if (!file)
    return false;
  c.ast = parseModule(c.sm, *file, c.diags);
  return c.ast.has_value();
}

bool runSema(Compilation &c) {
  sema::Options so;
  so.defines = c.opts.defines;
  so.moduleSearchPath = c.opts.includeDirs;
  so.moduleSearchPath.insert(so.moduleSearchPath.end(), c.opts.stdlibDirs.begin(),
                             c.opts.stdlibDirs.end());
  so.stem = fs::path(c.opts.input).stem().string();
  c.program = sema::analyze(*c.ast, c.sm, c.diags, so);
  return c.program.has_value();
}

bool runInferLayouts(Compilation &c) {
  return lower::inferLayouts(*c.program, c.target, c.diags, c.plan);
}

lower::GemmOverlap gemmOverlapOf(const DriverOptions &o) {
  return o.overlapGemms     ? lower::GemmOverlap::On
         : o.noOverlapGemms ? lower::GemmOverlap::Off
                            : lower::GemmOverlap::Auto;
}

lower::PingPong pingPongOf(const DriverOptions &o) {
  return o.pingPong     ? lower::PingPong::On
         : o.noPingPong ? lower::PingPong::Off
                        : lower::PingPong::Auto;
}

bool runPlanPipelines(Compilation &c) {
  lower::planPipelines(
      *c.program, c.target, c.plan,
      {gemmOverlapOf(c.opts), pingPongOf(c.opts), c.opts.pingPongTiles, !c.opts.noTmaPrologue});
  return true;
}

lower::Persistence persistenceOf(const DriverOptions &o) {
  return o.persistent     ? lower::Persistence::On
         : o.noPersistent ? lower::Persistence::Off
                          : lower::Persistence::Gemm;
}

bool runPlanShared(Compilation &c) {
  lower::planShared(*c.program, c.target, c.plan, persistenceOf(c.opts));
  return true;
}

bool runDeferRowSums(Compilation &c) {
  if (!c.opts.noDeferredSums)
    lower::planDeferredSums(*c.program, c.plan);
  return true;
}

bool runPlanScoreWarpgroup(Compilation &c) {
  if (!c.opts.noScoreWarpgroup)
    lower::planScoreWarpgroups(*c.program, c.target, c.plan);
  return true;
}

bool runLowerToThreadIR(Compilation &c) {
  lower::Options lo;
  lo.target = c.target;
  lo.persistence = persistenceOf(c.opts);
  c.lowered = lower::lowerToThreadIR(*c.program, c.plan, c.diags, lo);
  return c.lowered.has_value();
}

bool runInsertBarriers(Compilation &c) {
  sync::insertBarriers(c.lowered->module);
  return true;
}

bool runElideFences(Compilation &c) {
  sync::elideFences(c.lowered->module);
  return true;
}

bool runInterleaveWgmma(Compilation &c) {
  schedule::interleaveWgmma(c.lowered->module);
  return true;
}

bool runFoldAccumulatorClears(Compilation &c) {
  schedule::foldAccumulatorClears(c.lowered->module);
  return true;
}

// Four chains: a stage's 32 k-steps of W4A16 at decode shapes in chains of 8.
constexpr int kWgmmaChains = 4;

bool runSplitWgmmaChains(Compilation &c) {
  if (c.opts.splitWgmmaChains)
    schedule::splitWgmmaChains(c.lowered->module, kWgmmaChains);
  return true;
}

bool runDeferWgmmaWaits(Compilation &c) {
  if (c.opts.deferWgmmaWaits)
    schedule::deferWgmmaWaits(c.lowered->module);
  return true;
}

bool runBuildLLVM(Compilation &c) {
  auto mod = codegen::emitModule(c.lowered->module, c.codegenOptions(), c.llvmContext);
  if (!mod) {
    c.diags.error({}, mod.error());
    return false;
  }
  c.llvmModule = std::move(*mod);
  return true;
}

bool runOptimizeLLVM(Compilation &c) {
  if (auto ok = codegen::optimizeModule(*c.llvmModule, c.codegenOptions()); !ok) {
    c.diags.error({}, ok.error());
    return false;
  }
  return true;
}

bool runEmitAssembly(Compilation &c) {
  if (!c.wantsAssembly() && c.opts.dumpAfter != "emit-asm" && c.opts.dumpAfter != "emit-ptx")
    return true;
  auto p = codegen::emitAssembly(*c.llvmModule, c.codegenOptions());
  if (!p) {
    c.diags.error({}, p.error());
    return false;
  }
  c.assembly = std::move(*p);
  return true;
}

bool assemblePtx(Compilation &c) {
  auto ptxas = findPtxas();
  if (!ptxas) {
    c.diags.warning({}, "ptxas not found (set TILEC_PTXAS or put it on PATH): no .cubin is "
                        "written and the header embeds PTX, which the driver compiles at load");
    return true;
  }
  ToolResult r = runPtxas(*ptxas, c.assembly, c.target.arch);
  if (!r.ok) {
    c.diags.error({}, fmt::format("ptxas failed (this is a compiler bug):\n{}", r.log));
    return false;
  }
  c.binary = std::move(r.output);
  return true;
}

// AMD: LLVM writes the object itself; ld.lld makes it the code object the HIP runtime loads.
bool linkCodeObject(Compilation &c) {
  auto object = codegen::emitObject(*c.llvmModule, c.codegenOptions());
  if (!object) {
    c.diags.error({}, object.error());
    return false;
  }
  auto lld = findLld();
  if (!lld) {
    c.diags.error({}, "ld.lld not found (set TILEC_LLD, or install lld-22): it links the "
                      "AMDGPU object into a code object");
    return false;
  }
  ToolResult r = runLld(*lld, *object);
  if (!r.ok) {
    c.diags.error({}, fmt::format("ld.lld failed (this is a compiler bug):\n{}", r.log));
    return false;
  }
  c.binary = std::move(r.output);
  return true;
}

bool runAssemble(Compilation &c) {
  if (!c.wantsBinary())
    return true;
  return c.target.isAmd() ? linkCodeObject(c) : assemblePtx(c);
}

std::string dumpAST(const Compilation &c) { return printAST(*c.ast); }
std::string dumpTileIR(const Compilation &c) { return tile::print(*c.program); }
std::string dumpPlan(const Compilation &c) {
  return tile::print(*c.program) + lower::printPlan(*c.program, c.plan);
}
std::string dumpThreadIR(const Compilation &c) { return thir::print(c.lowered->module); }
std::string dumpLLVM(const Compilation &c) { return codegen::emitLLVMText(*c.llvmModule); }
std::string dumpAssembly(const Compilation &c) { return c.assembly; }
std::string dumpBinary(const Compilation &c) {
  std::string_view ext = c.target.binaryExtension();
  return c.binary ? fmt::format("; {} for {}: {} bytes\n", ext, c.target.arch, c.binary->size())
                  : fmt::format("; no {} (not asked for, or ptxas not found)\n", ext);
}

} // namespace

const std::vector<Pass> &compilePipeline() {
  static const std::vector<Pass> passes = {
      {"parse", "text -> AST", runParse, dumpAST},
      {"sema", "AST -> tile IR: names, constants, types, shapes, macros, imports", runSema,
       dumpTileIR},
      {"infer-layouts", "fragment layouts by constraint propagation", runInferLayouts, dumpPlan},
      {"plan-pipelines", "Pipelined loops: which global->shared copies are issued ahead",
       runPlanPipelines, dumpPlan},
      {"plan-shared", "shared-memory placement, swizzles and buffer versions", runPlanShared,
       dumpPlan},
      {"defer-row-sums", "row sums a loop accumulates reduced across threads once, after it",
       runDeferRowSums, dumpPlan},
      {"plan-score-warpgroup",
       "scores warpgroup 0 can compute alone (decided only: not lowered yet)",
       runPlanScoreWarpgroup, dumpPlan},
      {"lower-to-thread-ir", "tile IR -> thread IR as the plan decided", runLowerToThreadIR,
       dumpThreadIR},
      {"insert-barriers", "barriers (and async-proxy fences) where threads share memory",
       runInsertBarriers, dumpThreadIR},
      {"elide-fences", "async-proxy fences that fence nothing or serve no one removed",
       runElideFences, dumpThreadIR},
      {"interleave-wgmma",
       "a register-A wgmma issued step by step as its operand registers are computed",
       runInterleaveWgmma, dumpThreadIR},
      {"fold-accumulator-clears", "zeros written to a wgmma's accumulators become its own clear",
       runFoldAccumulatorClears, dumpThreadIR},
      {"split-wgmma-chains",
       "a narrow wgmma's k-steps dealt to independent accumulator chains (--split-wgmma-chains)",
       runSplitWgmmaChains, dumpThreadIR},
      {"defer-wgmma-waits",
       "a run of gemms leaves its wgmma groups in flight until the last (--defer-wgmma-waits)",
       runDeferWgmmaWaits, dumpThreadIR},
      {"build-llvm", "thread IR -> LLVM IR (NVPTX or AMDGPU)", runBuildLLVM, dumpLLVM},
      {"optimize-llvm", "LLVM's O3 pipeline", runOptimizeLLVM, dumpLLVM},
      {"emit-asm", "LLVM IR -> PTX (NVIDIA) or AMDGCN assembly (AMD)", runEmitAssembly,
       dumpAssembly},
      {"assemble", "PTX -> cubin (ptxas), or LLVM IR -> object -> code object (ld.lld)",
       runAssemble, dumpBinary},
  };
  return passes;
}

bool isThreadIRInput(const std::string &path) { return fs::path(path).extension() == ".thir"; }

size_t threadIRFirstPass() {
  const auto &passes = compilePipeline();
  for (size_t i = 0; i < passes.size(); ++i)
    if (passes[i].name == "insert-barriers")
      return i;
  throw std::logic_error("the pipeline has no insert-barriers pass");
}

bool loadThreadIR(Compilation &c, std::ostream &out) {
  std::string_view dump = passForDumpName(c.opts.dumpAfter);
  const auto &passes = compilePipeline();
  // The passes the text stands in for: lower-to-thread-ir's dump is this file itself.
  const size_t replaced = threadIRFirstPass() - 1;
  for (size_t i = 0; i < replaced; ++i)
    if (passes[i].name == dump) {
      c.diags.error({}, fmt::format("--dump-after={} needs a .tile source; a .thir file is thread "
                                    "IR",
                                    c.opts.dumpAfter));
      return false;
    }
  if (!c.opts.defines.empty()) {
    c.diags.error({}, "-D applies to .tile sources, not to thread IR");
    return false;
  }
  auto file = readInput(c, c.opts.input);
  if (!file)
    return false;
  auto module = thir::parseThreadIR(c.sm, *file, c.diags);
  if (!module)
    return false;
  c.lowered.emplace();
  c.lowered->module = std::move(*module);
  if (dump == "lower-to-thread-ir")
    out << thir::print(c.lowered->module);
  return true;
}

std::string_view passForDumpName(std::string_view name) {
  if (name == "ast")
    return "parse";
  if (name == "tile-ir")
    return "sema";
  if (name == "emit-ptx") // the pass's name before AMD targets
    return "emit-asm";
  // The thread IR code generation reads: after the last pass over thread IR.
  if (name == "thread-ir")
    return "elide-fences";
  for (const Pass &p : compilePipeline())
    if (p.name == name)
      return p.name;
  return {};
}

std::vector<std::string> dumpNames() {
  std::vector<std::string> names;
  for (const Pass &p : compilePipeline())
    names.emplace_back(p.name);
  for (const char *alias : {"ast", "tile-ir", "thread-ir", "emit-ptx"})
    names.emplace_back(alias);
  return names;
}

std::string formatStepTimes(const std::vector<std::pair<std::string, double>> &times) {
  double total = 0;
  size_t width = std::string_view("total").size();
  for (const auto &[name, ms] : times) {
    total += ms;
    width = std::max(width, name.size());
  }
  std::string text = fmt::format("{:<{}}  {:>10}  {:>6}\n", "pass", width, "wall ms", "share");
  auto line = [&](std::string_view name, double ms) {
    double share = total > 0 ? 100.0 * ms / total : 0.0;
    text += fmt::format("{:<{}}  {:>10.2f}  {:>5.1f}%\n", name, width, ms, share);
  };
  for (const auto &[name, ms] : times)
    line(name, ms);
  line("total", total);
  return text;
}

std::string printPipeline() {
  std::string text;
  size_t width = 0;
  for (const Pass &p : compilePipeline())
    width = std::max(width, p.name.size());
  for (const Pass &p : compilePipeline())
    text += fmt::format("{:<{}} {}\n", p.name, width, p.summary);
  return text;
}

bool runPipeline(Compilation &c, size_t from, size_t count, std::ostream &out) {
  std::string_view dump = passForDumpName(c.opts.dumpAfter);
  const auto &passes = compilePipeline();
  for (size_t i = from; i < count && i < passes.size(); ++i) {
    if (!timeStep(c, passes[i].name, [&] { return passes[i].run(c); }))
      return false;
    if (passes[i].name == dump)
      out << passes[i].dump(c);
  }
  return true;
}

} // namespace tilec::driver
