#include "driver/Driver.h"

#include "driver/HeaderGen.h"
#include "driver/LayoutReport.h"
#include "driver/LayoutSvg.h"
#include "driver/Pipeline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <set>
#include <sstream>
#include <unistd.h>

namespace tilec::driver {

namespace fs = std::filesystem;

const std::vector<std::string> &emitKinds() {
  static const std::vector<std::string> kinds = {"cubin",  "ptx",      "asm",    "llvm",
                                                 "header", "c-header", "layout", "layout-svg"};
  return kinds;
}

namespace {

/// ANSI colours for --color: the location bold, the severity in its colour, the caret green.
std::string colorize(const std::string &text) {
  static constexpr std::string_view kBold = "\033[1m", kReset = "\033[0m";
  std::string out;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    bool done = false;
    for (auto [word, color] :
         {std::pair<std::string_view, std::string_view>{"error: ", "\033[1;31m"},
          {"warning: ", "\033[1;35m"},
          {"note: ", "\033[1;36m"}}) {
      size_t at = line.find(word);
      if (at == std::string::npos ||
          (at >= 2 && line.compare(at - 2, 2, ": ") != 0 && line.compare(0, at, "tilec: ") != 0))
        continue;
      out += fmt::format("{}{}{}{}{}{}{}{}\n", kBold, line.substr(0, at), kReset, color, word,
                         kReset, kBold, line.substr(at + word.size()));
      out += kReset;
      done = true;
      break;
    }
    if (done)
      continue;
    if (line.find_first_not_of(' ') != std::string::npos &&
        line.find_first_not_of(" ^~") == std::string::npos)
      out += fmt::format("\033[1;32m{}{}\n", line, kReset);
    else
      out += line + "\n";
  }
  return out;
}

/// Everything one run needs: the sources, the diagnostics, and where they are printed under the
/// options that govern them (-w, -Werror, --color).
struct Session {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::ostream &err;
  const DriverOptions &opts;
  /// Set once an error (or, under -Werror, a warning) was printed.
  bool failed = false;
  /// What was printed, each error or warning with its notes: a later compilation of the same
  /// source (another --arch target) prints only what differs.
  std::set<std::string> printed;
  Session(std::ostream &e, const DriverOptions &o) : err(e), opts(o) {}

  /// Prints the diagnostics of `d` (this session's or another compilation's) that were not
  /// printed before: warnings dropped under -w, made errors under -Werror.
  void print(const DiagnosticEngine &d) {
    std::string group, text;
    std::vector<std::string> groups;
    bool failing = false, skipping = false;
    // Only what an earlier engine printed is left out: within one, a repeat is printed again.
    auto finish = [&]() {
      if (!group.empty() && !printed.count(group)) {
        text += group;
        failed = failed || failing;
        groups.push_back(group);
      }
      group.clear();
    };
    for (Diagnostic x : d.diagnostics()) {
      if (x.severity != Severity::Note) {
        finish();
        skipping = x.severity == Severity::Warning && opts.noWarnings;
        failing = x.severity == Severity::Error;
        if (x.severity == Severity::Warning && opts.warningsAsErrors && !skipping) {
          x.severity = Severity::Error;
          x.message += " [-Werror]";
          failing = true;
        }
      }
      if (!skipping)
        group += d.render(x);
    }
    finish();
    printed.insert(groups.begin(), groups.end());
    failed = failed || d.hasErrors();
    if (d.numErrors() > DiagnosticEngine::kMaxErrors)
      text += fmt::format("tilec: note: {} more errors not shown\n",
                          d.numErrors() - DiagnosticEngine::kMaxErrors);
    err << (opts.color ? colorize(text) : text);
  }

  /// Prints what this session reported and returns the exit status of the run.
  int flush() {
    print(diags);
    return failed ? 1 : 0;
  }
};

std::string stemOf(const std::string &path) { return fs::path(path).stem().string(); }

/// Writes every output next to its final name first and renames them only when all were
/// written, so that a failure leaves no partial outputs behind.
bool writeOutputs(Session &s, const fs::path &dir,
                  const std::vector<std::pair<std::string, std::string>> &files) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    s.diags.error({}, fmt::format("output directory '{}' does not exist", dir.string()));
    return false;
  }
  // An output name taken by something that is not a file (a directory) would make a rename
  // fail after others succeeded; refuse before writing anything.
  for (const auto &[name, content] : files) {
    fs::path final = dir / name;
    if (fs::exists(fs::symlink_status(final, ec)) && !fs::is_regular_file(final, ec)) {
      s.diags.error({}, fmt::format("cannot write '{}': it exists and is not a regular file",
                                    final.string()));
      return false;
    }
  }
  std::vector<std::pair<fs::path, fs::path>> staged;
  auto cleanup = [&]() {
    for (auto &[tmp, final] : staged)
      fs::remove(tmp, ec);
  };
  for (const auto &[name, content] : files) {
    fs::path final = dir / name;
    fs::path tmp = dir / fmt::format(".{}.tmp{}", name, ::getpid());
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    out.close();
    staged.emplace_back(tmp, final);
    if (!out) {
      s.diags.error({}, fmt::format("cannot write '{}'", final.string()));
      cleanup();
      return false;
    }
  }
  size_t renamed = 0;
  for (auto &[tmp, final] : staged) {
    fs::rename(tmp, final, ec);
    if (ec) {
      s.diags.error({}, fmt::format("cannot write '{}': {}", final.string(), ec.message()));
      cleanup();
      // The outputs already renamed are from this failed run: remove them too.
      for (size_t i = 0; i < renamed; ++i)
        fs::remove(staged[i].second, ec);
      return false;
    }
    ++renamed;
  }
  return true;
}

/// A -D value as the header's constant: True/False or an integer (as sema reads them).
std::optional<HeaderConstant> defineConstant(const std::string &name, const std::string &text) {
  std::string t;
  for (char ch : text)
    if (ch != '_')
      t += ch;
  if (t == "True" || t == "False")
    return HeaderConstant{name, true, t == "True"};
  std::string_view digits = t;
  bool neg = !digits.empty() && digits.front() == '-';
  if (neg)
    digits.remove_prefix(1);
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
    base = 16;
    digits.remove_prefix(2);
  }
  int64_t v = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
  if (ec != std::errc() || p != digits.data() + digits.size() || digits.empty())
    return std::nullopt;
  return HeaderConstant{name, false, neg ? -v : v};
}

/// Every name used in the shape of a tensor parameter: `Tensor((M, K), dtype)` gives M, K and
/// dtype. A -D that names one of them (and no const) fixes a symbolic dimension.
void collectNames(const ast::Expr &e, std::set<std::string> &names) {
  std::visit(
      [&](const auto &n) {
        using T = std::decay_t<decltype(n)>;
        if constexpr (std::is_same_v<T, ast::Name>)
          names.insert(n.id);
        else if constexpr (std::is_same_v<T, ast::Call>) {
          for (const ast::ExprPtr &a : n.args)
            collectNames(*a, names);
        } else if constexpr (std::is_same_v<T, ast::Tuple> || std::is_same_v<T, ast::List>) {
          for (const ast::ExprPtr &a : n.elts)
            collectNames(*a, names);
        }
      },
      e.node);
}

/// The constants a framework may want at compile time: the main file's `const`s whose value is
/// an integer or boolean literal, and every -D that gives one to such a const or to a
/// symbolic dimension (fixing it). Constants computed from others are left out.
std::vector<HeaderConstant> headerConstants(const ast::Module &module,
                                            const std::map<std::string, std::string> &defines) {
  std::vector<HeaderConstant> out;
  std::set<std::string> seen;
  for (const ast::TopLevel &item : module.items) {
    const auto *c = std::get_if<ast::ConstDecl>(&item);
    if (!c || !seen.insert(c->name).second)
      continue;
    if (auto d = defines.find(c->name); d != defines.end()) {
      if (auto v = defineConstant(c->name, d->second))
        out.push_back(*v);
    } else if (const auto *i = std::get_if<ast::IntLit>(&c->value->node)) {
      out.push_back({c->name, false, i->value});
    } else if (const auto *b = std::get_if<ast::BoolLit>(&c->value->node)) {
      out.push_back({c->name, true, b->value});
    }
  }
  std::set<std::string> shapeNames;
  for (const ast::TopLevel &item : module.items)
    if (const auto *f = std::get_if<ast::FuncDef>(&item))
      for (const ast::Param &p : f->params)
        if (p.annotation)
          collectNames(*p.annotation, shapeNames);
  for (const auto &[name, text] : defines)
    if (!seen.count(name) && shapeNames.count(name))
      if (auto v = defineConstant(name, text))
        out.push_back(*v);
  return out;
}

/// A path as Make and Ninja read it in a depfile.
std::string depfileEscape(const std::string &path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#' || c == '\\')
      out += '\\';
    if (c == '$')
      out += '$';
    out += c;
  }
  return out;
}

/// Writes the depfile: every output depends on each file the compilation read (the source and
/// the modules it imported, in the order they were read). Written through a temporary and a
/// rename like the outputs, and only after they were.
bool writeDepfile(Session &s, const SourceManager &sm, const std::string &depfile,
                  const fs::path &outDir,
                  const std::vector<std::pair<std::string, std::string>> &files) {
  std::string text;
  for (const auto &[name, content] : files)
    text += (text.empty() ? "" : " ") + depfileEscape((outDir / name).string());
  text += ":";
  std::error_code ec;
  for (uint32_t i = 0; i < sm.numBuffers(); ++i)
    if (fs::is_regular_file(sm.name(i), ec))
      text += " \\\n  " + depfileEscape(sm.name(i));
  text += "\n";
  fs::path final = depfile;
  fs::path tmp =
      final.parent_path() / fmt::format(".{}.tmp{}", final.filename().string(), ::getpid());
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (out)
    fs::rename(tmp, final, ec);
  if (!out || ec) {
    fs::remove(tmp, ec);
    s.diags.error({}, fmt::format("cannot write the depfile '{}'", depfile));
    return false;
  }
  return true;
}

/// Prints the diagnostics, then the --time-passes table when asked for; returns the exit
/// status.
int finish(Session &s, const Compilation &c) {
  int status = s.flush();
  if (c.opts.timePasses)
    s.err << formatStepTimes(c.stepTimes);
  return status;
}

} // namespace

std::string codegenFlags(const DriverOptions &opts) {
  std::string flags;
  for (const auto &[set, name] : {std::pair{opts.preciseDiv, "--precise-div"},
                                  {opts.fastMath, "--fast-math"},
                                  {opts.noFma, "--no-fma"},
                                  {opts.persistent, "--persistent"},
                                  {opts.noPersistent, "--no-persistent"},
                                  {opts.pingPong, "--ping-pong"},
                                  {opts.noPingPong, "--no-ping-pong"},
                                  {opts.noTmaPrologue, "--no-tma-prologue"},
                                  {opts.noDeferredSums, "--no-deferred-sums"},
                                  {opts.noScoreWarpgroup, "--no-score-warpgroup"},
                                  {opts.splitWgmmaChains, "--split-wgmma-chains"},
                                  {opts.deferWgmmaWaits, "--defer-wgmma-waits"},
                                  {opts.overlapGemms, "--overlap-gemms"},
                                  {opts.noOverlapGemms, "--no-overlap-gemms"},
                                  {opts.pingPongTiles, "--ping-pong-tiles"}})
    if (set)
      flags += fmt::format(" {}", name);
  return flags;
}

int runCheck(const DriverOptions &opts, std::ostream &out, std::ostream &err) {
  Session s(err, opts);
  Compilation c(opts, s.sm, s.diags, target::defaultTarget());
  if (isThreadIRInput(opts.input))
    timeStep(c, "parse-thread-ir", [&] { return loadThreadIR(c, out); });
  else
    runPipeline(c, 0, kCheckPasses, out);
  return finish(s, c);
}

namespace {

/// One target of --arch: `sm_80`, or `sm_80+ptx` (machine code and PTX, so that the header also
/// runs on later GPUs through the driver's JIT).
struct ArchRequest {
  target::TargetInfo target;
  bool addPtx = false;
};

std::optional<std::vector<ArchRequest>> parseArchs(Session &s, const std::string &list) {
  std::vector<ArchRequest> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    bool addPtx = item.size() > 4 && item.compare(item.size() - 4, 4, "+ptx") == 0;
    std::string name = addPtx ? item.substr(0, item.size() - 4) : item;
    std::optional<target::TargetInfo> t = target::targetInfo(name);
    if (!t) {
      s.diags.error({}, fmt::format("unsupported --arch '{}' (supported: {})", name,
                                    fmt::join(target::supportedArchs(), ", ")));
      return std::nullopt;
    }
    for (const ArchRequest &r : out)
      if (r.target.arch == t->arch) {
        s.diags.error({}, fmt::format("--arch names '{}' twice", t->arch));
        return std::nullopt;
      }
    if (addPtx && t->isAmd()) {
      s.diags.error({}, fmt::format("--arch '{}': {} has no PTX to add", item, t->arch));
      return std::nullopt;
    }
    if (!out.empty() && out.front().target.isAmd() != t->isAmd()) {
      s.diags.error({}, fmt::format("--arch '{}' mixes NVIDIA and AMD targets: a header launches "
                                    "through one of CUDA and HIP; compile them separately",
                                    list));
      return std::nullopt;
    }
    out.push_back({*t, addPtx});
  }
  if (out.empty()) {
    s.diags.error({}, fmt::format("unsupported --arch '{}' (supported: {})", list,
                                  fmt::join(target::supportedArchs(), ", ")));
    return std::nullopt;
  }
  return out;
}

/// The compilation for one target, with its own sources and diagnostics (every target runs the
/// whole pipeline; the front end's diagnostics repeat and are printed once).
struct ArchRun {
  DriverOptions opts;
  bool addPtx;
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::optional<Compilation> c;
  ArchRun(const DriverOptions &o, const ArchRequest &r) : opts(o), addPtx(r.addPtx) {
    opts.arch = r.target.arch;
    c.emplace(opts, sm, diags, r.target);
  }
};

/// --time-passes: the table of each target's compilation (named when there are several).
void printStepTimes(Session &s, const std::vector<std::unique_ptr<ArchRun>> &runs) {
  for (const auto &run : runs) {
    if (!run->opts.timePasses)
      return;
    if (runs.size() > 1)
      s.err << fmt::format("--arch {}:\n", run->opts.arch);
    s.err << formatStepTimes(run->c->stepTimes);
  }
}

} // namespace

int compileAndUse(const DriverOptions &opts, std::ostream &out, std::ostream &err,
                  const std::function<int(Compilation &)> &use, bool frontEndOnly) {
  Session s(err, opts);
  std::optional<std::vector<ArchRequest>> archs = parseArchs(s, opts.arch);
  if (!archs)
    return s.flush();
  if (archs->size() != 1 || archs->front().addPtx) {
    s.diags.error({}, fmt::format("--arch '{}': name a single target", opts.arch));
    return s.flush();
  }
  if (isThreadIRInput(opts.input)) {
    s.diags.error({}, "a .thir input has no tile-level signature to run; give the .tile source");
    return s.flush();
  }
  if (archs->front().target.isAmd()) {
    s.diags.error({}, fmt::format("not supported yet: running kernels for {} (bench and tune "
                                  "launch through the CUDA driver)",
                                  archs->front().target.arch));
    return s.flush();
  }
  ArchRun run(opts, archs->front());
  run.opts.emit = {"cubin"};
  Compilation &c = *run.c;
  bool ok = runPipeline(c, 0, frontEndOnly ? kCheckPasses : compilePipeline().size(), out);
  s.print(run.diags);
  int status = s.flush();
  if (opts.timePasses)
    err << formatStepTimes(c.stepTimes);
  return !ok || status != 0 ? 1 : use(c);
}

int runCompile(const DriverOptions &opts, std::ostream &out, std::ostream &err) {
  Session s(err, opts);
  std::optional<std::vector<ArchRequest>> archs = parseArchs(s, opts.arch);
  if (!archs)
    return s.flush();
  for (const std::string &k : opts.emit)
    if (std::find(emitKinds().begin(), emitKinds().end(), k) == emitKinds().end()) {
      s.diags.error(
          {}, fmt::format("unknown --emit kind '{}' (kinds: {})", k, fmt::join(emitKinds(), ", ")));
      return s.flush();
    }
  std::string stem = stemOf(opts.input);
  std::string ns = opts.ns.empty() ? defaultNamespace(stem) : opts.ns;
  if (!isValidNamespace(ns)) {
    s.diags.error({}, fmt::format("--namespace '{}' is not a valid C++ namespace name", ns));
    return s.flush();
  }
  bool threadIR = isThreadIRInput(opts.input);
  if (threadIR && (opts.emit.count("layout") || opts.emit.count("layout-svg"))) {
    s.diags.error({}, "--emit layout needs a .tile source (a .thir file has no tile-level "
                      "layouts to report)");
    return s.flush();
  }
  bool amd = archs->front().target.isAmd();
  std::string_view arch0 = archs->front().target.arch;
  if (amd && opts.emit.count("ptx")) {
    s.diags.error({}, fmt::format("--emit ptx needs an NVIDIA --arch ({} has no PTX; --emit asm "
                                  "writes its AMDGCN assembly)",
                                  arch0));
    return s.flush();
  }
  if (!amd && opts.emit.count("asm")) {
    s.diags.error({}, fmt::format("--emit asm is AMDGCN assembly, for AMD targets ({} has "
                                  "PTX: --emit ptx)",
                                  arch0));
    return s.flush();
  }
  if (amd && opts.embed == "ptx") {
    s.diags.error({}, fmt::format("--embed ptx needs an NVIDIA --arch ({} has no PTX)", arch0));
    return s.flush();
  }
  bool several = archs->size() > 1;
  if (several && !opts.dumpAfter.empty()) {
    s.diags.error({}, "--dump-after needs a single --arch");
    return s.flush();
  }

  std::vector<std::unique_ptr<ArchRun>> runs;
  for (const ArchRequest &r : *archs) {
    runs.push_back(std::make_unique<ArchRun>(opts, r));
    Compilation &c = *runs.back()->c;
    bool ok = threadIR ? timeStep(c, "parse-thread-ir", [&] { return loadThreadIR(c, out); }) &&
                             runPipeline(c, threadIRFirstPass(), compilePipeline().size(), out)
                       : runPipeline(c, 0, compilePipeline().size(), out);
    // A later target prints only the diagnostics that differ from an earlier one's (the front
    // end's warnings would otherwise repeat once per target).
    s.print(runs.back()->diags);
    if (!ok || s.failed) {
      printStepTimes(s, runs);
      return 1;
    }
  }

  // With several targets, the per-target outputs carry the target's name: gemm.sm_80.ptx.
  auto perArch = [&](const ArchRun &r, std::string_view ext) {
    return several ? fmt::format("{}.{}.{}", stem, r.opts.arch, ext)
                   : fmt::format("{}.{}", stem, ext);
  };
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto &run : runs) {
    const Compilation &c = *run->c;
    if (opts.emit.count("llvm"))
      files.emplace_back(perArch(*run, "ll"), codegen::emitLLVMText(*c.llvmModule));
    if (opts.emit.count("ptx"))
      files.emplace_back(perArch(*run, "ptx"), c.assembly);
    if (opts.emit.count("asm"))
      files.emplace_back(perArch(*run, "s"), c.assembly);
    if (opts.emit.count("cubin") && c.binary)
      files.emplace_back(perArch(*run, c.target.binaryExtension()), *c.binary);
  }
  if (opts.emit.count("header")) {
    Compilation &first = *runs.front()->c;
    HeaderOptions ho;
    ho.ns = ns;
    ho.sourceName = fs::path(opts.input).filename().string();
    if (first.ast)
      ho.constants = headerConstants(*first.ast, opts.defines);
    // Per target: its cubin (unless --embed ptx, or no ptxas), and its PTX when asked for
    // (+ptx, --embed ptx) or when there is no cubin.
    std::vector<HeaderImage> images;
    for (const auto &run : runs) {
      const Compilation &c = *run->c;
      bool cubin = opts.embed == "cubin" && c.binary;
      if (cubin)
        images.push_back({&c.lowered->module, run->opts.arch, *c.binary, BinaryKind::Cubin});
      if (!cubin || run->addPtx)
        images.push_back({&c.lowered->module, run->opts.arch, c.assembly, BinaryKind::Ptx});
    }
    files.emplace_back(stem + ".h",
                       timeStep(first, "header", [&] { return generateHeader(images, ho); }));
    if (opts.emit.count("c-header"))
      files.emplace_back(stem + "_c.h", generateCHeader(images, ho, stem + ".h"));
  }
  if (opts.emit.count("layout"))
    for (const auto &run : runs)
      files.emplace_back(perArch(*run, "layout.json"),
                         layoutReport(*run->c->program, *run->c->lowered,
                                      {fs::path(opts.input).filename().string(), run->opts.arch,
                                       opts.layoutDetailFull}));
  if (opts.emit.count("layout-svg"))
    for (const auto &run : runs)
      files.emplace_back(perArch(*run, "layout.svg"),
                         layoutSvg(layoutReport(
                             *run->c->program, *run->c->lowered,
                             {fs::path(opts.input).filename().string(), run->opts.arch, true})));
  // A depfile that cannot be written fails the compilation before any output is written.
  if (!opts.depfile.empty()) {
    std::error_code ec;
    fs::path parent = fs::path(opts.depfile).parent_path();
    if (!fs::is_directory(parent.empty() ? fs::path(".") : parent, ec) ||
        fs::is_directory(opts.depfile, ec)) {
      s.diags.error({}, fmt::format("cannot write the depfile '{}'", opts.depfile));
      return s.flush();
    }
  }
  bool written = timeStep(*runs.front()->c, "write-outputs",
                          [&] { return writeOutputs(s, opts.outDir, files); });
  if (written && !opts.depfile.empty())
    writeDepfile(s, runs.front()->sm, opts.depfile, opts.outDir, files);
  int status = s.flush();
  printStepTimes(s, runs);
  return status;
}

} // namespace tilec::driver
