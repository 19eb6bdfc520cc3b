#include "driver/Driver.h"

#include "codegen/NVPTXCodegen.h"
#include "driver/HeaderGen.h"
#include "driver/LayoutReport.h"
#include "driver/Ptxas.h"
#include "lower/Lower.h"
#include "sema/Sema.h"
#include "syntax/ASTPrinter.h"
#include "syntax/Parser.h"
#include "threadir/ThreadIRParser.h"

#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
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

std::optional<uint32_t> readInput(Session &s, const std::string &path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    s.diags.error({}, fs::exists(path, ec) ? fmt::format("'{}' is not a regular file", path)
                                           : fmt::format("cannot open '{}': no such file", path));
    return std::nullopt;
  }
  auto size = fs::file_size(path, ec);
  if (ec || size > kMaxSourceFileSize) {
    s.diags.error({},
                  fmt::format("'{}' is too large (limit {} MiB)", path, kMaxSourceFileSize >> 20));
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) {
    s.diags.error({}, fmt::format("cannot read '{}'", path));
    return std::nullopt;
  }
  return s.sm.addBuffer(path, text.str());
}

std::string stemOf(const std::string &path) { return fs::path(path).stem().string(); }

/// Runs parse and sema; prints dumps asked for on the way.
std::optional<tile::Program> frontEnd(Session &s, const DriverOptions &opts, std::ostream &out) {
  auto file = readInput(s, opts.input);
  if (!file)
    return std::nullopt;
  auto module = parseModule(s.sm, *file, s.diags);
  if (!module)
    return std::nullopt;
  if (opts.dumpAfter == "ast")
    out << printAST(*module);
  sema::Options so;
  so.defines = opts.defines;
  so.moduleSearchPath = opts.includeDirs;
  if (!opts.stdlibDir.empty())
    so.moduleSearchPath.push_back(opts.stdlibDir);
  so.stem = stemOf(opts.input);
  auto program = sema::analyze(*module, s.sm, s.diags, so);
  if (program && opts.dumpAfter == "tile-ir")
    out << tile::print(*program);
  return program;
}

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

using OutputFiles = std::vector<std::pair<std::string, std::string>>;
bool backEnd(Session &s, const DriverOptions &opts, const thir::Module &m, const std::string &stem,
             const std::string &ns, OutputFiles &files);
bool isThreadIRInput(const std::string &path);
std::optional<thir::Module> threadIRFrontEnd(Session &s, const DriverOptions &opts,
                                             std::ostream &out);

} // namespace

int runCheck(const DriverOptions &opts, std::ostream &out, std::ostream &err) {
  Session s(err);
  if (isThreadIRInput(opts.input))
    threadIRFrontEnd(s, opts, out);
  else
    frontEnd(s, opts, out);
  return s.flush();
}

int runCompile(const DriverOptions &opts, std::ostream &out, std::ostream &err) {
  Session s(err);
  const auto &archs = codegen::supportedArchs();
  if (std::find(archs.begin(), archs.end(), opts.arch) == archs.end()) {
    std::string list;
    for (const std::string &a : archs)
      list += (list.empty() ? "" : ", ") + a;
    s.diags.error({}, fmt::format("unsupported --arch '{}' (supported: {})", opts.arch, list));
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
  if (isThreadIRInput(opts.input)) {
    if (opts.emit.count("layout")) {
      s.diags.error({}, "--emit layout needs a .tile source (a .thir file has no tile-level "
                        "layouts to report)");
      return s.flush();
    }
    auto module = threadIRFrontEnd(s, opts, out);
    OutputFiles files;
    if (module && backEnd(s, opts, *module, stem, ns, files))
      writeOutputs(s, opts.outDir, files);
    return s.flush();
  }
  auto program = frontEnd(s, opts, out);
  if (!program)
    return s.flush();
  lower::Options lo;
  lo.arch = opts.arch;
  auto lowered = lower::lowerProgram(*program, s.diags, lo);
  if (!lowered)
    return s.flush();
  if (opts.dumpAfter == "thread-ir")
    out << thir::print(lowered->module);

  OutputFiles files;
  if (!backEnd(s, opts, lowered->module, stem, ns, files))
    return s.flush();
  if (opts.emit.count("layout"))
    files.emplace_back(stem + ".layout.json",
                       layoutReport(*program, *lowered,
                                    {fs::path(opts.input).filename().string(), opts.arch,
                                     opts.layoutDetailFull}));
  writeOutputs(s, opts.outDir, files);
  return s.flush();
}

namespace {

/// Codegen and what follows: adds the .ll, .ptx, .cubin and header outputs asked for to
/// `files`. Returns false after reporting an error.
bool backEnd(Session &s, const DriverOptions &opts, const thir::Module &m, const std::string &stem,
             const std::string &ns, OutputFiles &files) {
  codegen::TargetOptions to;
  to.arch = opts.arch;
  to.preciseDiv = opts.preciseDiv;
  llvm::LLVMContext ctx;
  auto mod = codegen::buildModule(m, to, ctx);
  if (!mod) {
    s.diags.error({}, mod.error());
    return false;
  }
  if (opts.emit.count("llvm"))
    files.emplace_back(stem + ".ll", codegen::emitLLVMText(**mod));
  bool wantBinary = opts.emit.count("cubin") || opts.emit.count("header") || opts.emit.count("ptx");
  std::string ptx, cubin;
  if (wantBinary) {
    auto p = codegen::emitPTX(**mod, to);
    if (!p) {
      s.diags.error({}, p.error());
      return false;
    }
    ptx = std::move(*p);
  }
  if (opts.emit.count("ptx"))
    files.emplace_back(stem + ".ptx", ptx);
  BinaryKind kind = BinaryKind::Ptx;
  bool needCubin = opts.emit.count("cubin") || (opts.emit.count("header") && opts.embed == "cubin");
  if (needCubin) {
    if (auto ptxas = findPtxas()) {
      PtxasResult r = runPtxas(*ptxas, ptx, opts.arch);
      if (!r.ok) {
        s.diags.error({}, fmt::format("ptxas failed (this is a compiler bug):\n{}", r.log));
        return false;
      }
      cubin = std::move(r.cubin);
      kind = BinaryKind::Cubin;
      if (opts.emit.count("cubin"))
        files.emplace_back(stem + ".cubin", cubin);
    } else {
      s.diags.warning({}, "ptxas not found (set TILEC_PTXAS or put it on PATH): no .cubin is "
                          "written and the header embeds PTX, which the driver compiles at load");
    }
  }
  if (opts.emit.count("header")) {
    HeaderOptions ho;
    ho.ns = ns;
    ho.sourceName = fs::path(opts.input).filename().string();
    if (opts.embed == "ptx")
      kind = BinaryKind::Ptx;
    files.emplace_back(stem + ".h",
                       generateHeader(m, kind == BinaryKind::Cubin ? cubin : ptx, kind, ho));
  }
  return true;
}

bool isThreadIRInput(const std::string &path) { return fs::path(path).extension() == ".thir"; }

/// Reads thread IR text (tilec compile FILE.thir): what lowering would have produced, so the
/// pipeline goes on at codegen.
std::optional<thir::Module> threadIRFrontEnd(Session &s, const DriverOptions &opts,
                                             std::ostream &out) {
  if (opts.dumpAfter == "ast" || opts.dumpAfter == "tile-ir") {
    s.diags.error({}, fmt::format("--dump-after={} needs a .tile source; a .thir file is thread IR",
                                  opts.dumpAfter));
    return std::nullopt;
  }
  if (!opts.defines.empty()) {
    s.diags.error({}, "-D applies to .tile sources, not to thread IR");
    return std::nullopt;
  }
  auto file = readInput(s, opts.input);
  if (!file)
    return std::nullopt;
  auto module = thir::parseThreadIR(s.sm, *file, s.diags);
  if (module && opts.dumpAfter == "thread-ir")
    out << thir::print(*module);
  return module;
}

} // namespace

} // namespace tilec::driver
