#include "driver/Driver.h"

#include "driver/HeaderGen.h"
#include "driver/LayoutReport.h"
#include "driver/Pipeline.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>
#include <unistd.h>

namespace tilec::driver {

namespace fs = std::filesystem;

const std::vector<std::string> &emitKinds() {
  static const std::vector<std::string> kinds = {"cubin", "ptx", "llvm", "header", "layout"};
  return kinds;
}

namespace {

/// Everything one run needs: the sources, the diagnostics, and where they are printed.
struct Session {
  SourceManager sm;
  DiagnosticEngine diags{sm};
  std::ostream &err;
  explicit Session(std::ostream &e) : err(e) {}
  /// Prints what was reported so far and returns the exit status.
  int flush() {
    err << diags.renderAll();
    return diags.hasErrors() ? 1 : 0;
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

/// Prints the diagnostics, then the --time-passes table when asked for; returns the exit
/// status.
int finish(Session &s, const Compilation &c) {
  int status = s.flush();
  if (c.opts.timePasses)
    s.err << formatStepTimes(c.stepTimes);
  return status;
}

} // namespace

int runCheck(const DriverOptions &opts, std::ostream &out, std::ostream &err) {
  Session s(err);
  Compilation c(opts, s.sm, s.diags, target::defaultTarget());
  if (isThreadIRInput(opts.input))
    timeStep(c, "parse-thread-ir", [&] { return loadThreadIR(c, out); });
  else
    runPipeline(c, 0, kCheckPasses, out);
  return finish(s, c);
}

int runCompile(const DriverOptions &opts, std::ostream &out, std::ostream &err) {
  Session s(err);
  std::optional<target::TargetInfo> target = target::targetInfo(opts.arch);
  if (!target) {
    s.diags.error({}, fmt::format("unsupported --arch '{}' (supported: {})", opts.arch,
                                  fmt::join(target::supportedArchs(), ", ")));
    return s.flush();
  }
  for (const std::string &k : opts.emit)
    if (std::find(emitKinds().begin(), emitKinds().end(), k) == emitKinds().end()) {
      s.diags.error({}, fmt::format("unknown --emit kind '{}' (kinds: cubin, ptx, llvm, header, "
                                    "layout)",
                                    k));
      return s.flush();
    }
  std::string stem = stemOf(opts.input);
  std::string ns = opts.ns.empty() ? defaultNamespace(stem) : opts.ns;
  if (!isValidNamespace(ns)) {
    s.diags.error({}, fmt::format("--namespace '{}' is not a valid C++ namespace name", ns));
    return s.flush();
  }
  Compilation c(opts, s.sm, s.diags, *target);
  bool threadIR = isThreadIRInput(opts.input);
  if (threadIR && opts.emit.count("layout")) {
    s.diags.error({}, "--emit layout needs a .tile source (a .thir file has no tile-level "
                      "layouts to report)");
    return s.flush();
  }
  if (threadIR ? !timeStep(c, "parse-thread-ir", [&] { return loadThreadIR(c, out); }) ||
                     !runPipeline(c, threadIRFirstPass(), compilePipeline().size(), out)
               : !runPipeline(c, 0, compilePipeline().size(), out))
    return finish(s, c);

  std::vector<std::pair<std::string, std::string>> files;
  if (opts.emit.count("llvm"))
    files.emplace_back(stem + ".ll", codegen::emitLLVMText(*c.llvmModule));
  if (opts.emit.count("ptx"))
    files.emplace_back(stem + ".ptx", c.ptx);
  if (opts.emit.count("cubin") && c.cubin)
    files.emplace_back(stem + ".cubin", *c.cubin);
  if (opts.emit.count("header")) {
    HeaderOptions ho;
    ho.ns = ns;
    ho.sourceName = fs::path(opts.input).filename().string();
    bool embedCubin = opts.embed == "cubin" && c.cubin;
    files.emplace_back(stem + ".h", timeStep(c, "header", [&] {
                         return generateHeader(c.lowered->module, embedCubin ? *c.cubin : c.ptx,
                                               embedCubin ? BinaryKind::Cubin : BinaryKind::Ptx,
                                               ho);
                       }));
  }
  if (opts.emit.count("layout"))
    files.emplace_back(stem + ".layout.json", timeStep(c, "layout-report", [&] {
                         return layoutReport(*c.program, *c.lowered,
                                             {fs::path(opts.input).filename().string(),
                                              target->arch, opts.layoutDetailFull});
                       }));
  timeStep(c, "write-outputs", [&] { return writeOutputs(s, opts.outDir, files); });
  return finish(s, c);
}

} // namespace tilec::driver
