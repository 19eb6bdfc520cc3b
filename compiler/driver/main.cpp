// tilec: the command line. Parses options into DriverOptions; the work is in Driver.cpp.
#include "driver/Driver.h"
#include "driver/Pipeline.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

namespace {

/// The stdlib ships at ../share/tilec/stdlib relative to the binary, in the build tree and
/// after install alike.
std::string defaultStdlibDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    return {};
  auto dir = exe.parent_path().parent_path() / "share" / "tilec" / "stdlib";
  return std::filesystem::is_directory(dir, ec) ? dir.string() : std::string();
}

bool parseDefine(const std::string &text, tilec::driver::DriverOptions &o) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  o.defines[text.substr(0, eq)] = text.substr(eq + 1);
  return true;
}

} // namespace

int main(int argc, char **argv) {
  tilec::driver::DriverOptions opts;
  std::vector<std::string> defines;
  std::string emit;
  std::string layoutDetail = "summary";

  CLI::App app{"tilec: ahead-of-time compiler for .tile GPU kernels"};
  app.set_version_flag("--version", std::string("tilec 0.1.0 (LLVM 22, NVPTX)"));
  app.require_subcommand(1);

  auto addCommon = [&](CLI::App *cmd) {
    cmd->add_option("file", opts.input, "the .tile source, or thread IR text (.thir)");
    cmd->add_flag("--time-passes", opts.timePasses,
                  "print the wall time of each pass to stderr after compiling");
    // One value per flag, so that `-D X=1 FILE` does not take FILE as a second define.
    cmd->add_option("-D", defines, "NAME=VALUE: override a const or fix a symbolic dimension")
        ->allow_extra_args(false);
    cmd->add_option("-I", opts.includeDirs, "search DIR for imported modules (before the stdlib)")
        ->allow_extra_args(false);
  };
  // check runs the first passes only; compile takes any pass (--print-pipeline lists them).
  std::vector<std::string> checkDumps = {"parse", "sema", "ast", "tile-ir"};
  CLI::App *check = app.add_subcommand("check", "parse and verify only");
  addCommon(check);
  check->add_option("--dump-after", opts.dumpAfter, "print the IR after a pass to stdout")
      ->check(CLI::IsMember(checkDumps));
  CLI::App *compile = app.add_subcommand("compile", "compile to a cubin and a C++ header");
  addCommon(compile);
  compile
      ->add_option("--dump-after", opts.dumpAfter,
                   "print the IR after PASS to stdout (a pass of --print-pipeline, or ast, "
                   "tile-ir, thread-ir)")
      ->check(CLI::IsMember(tilec::driver::dumpNames()));
  bool printPipeline = false;
  compile->add_flag("--print-pipeline", printPipeline, "list the passes of the compiler and exit");
  compile->add_option("-o", opts.outDir, "output directory (default: .)");
  compile->add_option("--arch", opts.arch, "target GPU architecture (default: sm_90a)");
  compile->add_option("--emit", emit, "comma list of cubin,ptx,llvm,header,layout");
  compile->add_option("--namespace", opts.ns, "C++ namespace of the header (default: tile::STEM)");
  compile
      ->add_option("--embed", opts.embed,
                   "what the header embeds: cubin (default) or ptx (JIT-compiled at load)")
      ->check(CLI::IsMember({"cubin", "ptx"}));
  compile->add_flag("--precise-div", opts.preciseDiv,
                    "float32 '/' as IEEE division (default: div.full.f32, at most 2 ulp)");
  compile->add_option("--layout-detail", layoutDetail, "summary or full")
      ->check(CLI::IsMember({"summary", "full"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    if (e.get_exit_code() == 0) // --help, --version
      return app.exit(e);
    // Usage errors follow the diagnostic format like every other error.
    std::cerr << "tilec: error: " << e.what() << "\nrun 'tilec --help' for usage\n";
    return 1;
  }
  if (printPipeline) {
    std::cout << tilec::driver::printPipeline();
    return 0;
  }
  // Required unless --print-pipeline: CLI11's own check would not know the exception.
  if (opts.input.empty()) {
    std::cerr << "tilec: error: file is required\nrun 'tilec --help' for usage\n";
    return 1;
  }
  for (const std::string &d : defines)
    if (!parseDefine(d, opts)) {
      std::cerr << "tilec: error: -D expects NAME=VALUE, got '" << d << "'\n";
      return 1;
    }
  if (!emit.empty()) {
    opts.emit.clear();
    std::stringstream ss(emit);
    for (std::string k; std::getline(ss, k, ',');)
      if (!k.empty())
        opts.emit.insert(k);
  }
  opts.layoutDetailFull = layoutDetail == "full";
  opts.stdlibDir = defaultStdlibDir();
  try {
    if (check->parsed())
      return tilec::driver::runCheck(opts, std::cout, std::cerr);
    return tilec::driver::runCompile(opts, std::cout, std::cerr);
  } catch (const std::exception &e) {
    std::cerr << "tilec: internal compiler error: " << e.what()
              << "\nplease report this with the input file\n";
    return 1;
  }
}
