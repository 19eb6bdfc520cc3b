// tilec: the command line. Parses options into DriverOptions; the work is in Driver.cpp.
#include "driver/Bench.h"
#include "driver/Driver.h"
#include "driver/Parallel.h"
#include "driver/Pipeline.h"
#include "driver/Tune.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <stdexcept>

#include <unistd.h>

namespace {

/// Where to look for the stdlib: the directories of TILEC_STDLIB_PATH (':'-separated), then
/// ../share/tilec/stdlib relative to the binary itself (not to the prefix it was built for), in
/// the build tree and after install, wherever the prefix was copied. The latter is listed even
/// when it does not exist, so that a failed import says where it looked.
std::vector<std::string> stdlibDirs() {
  std::vector<std::string> dirs;
  if (const char *env = std::getenv("TILEC_STDLIB_PATH")) {
    std::stringstream ss(env);
    for (std::string dir; std::getline(ss, dir, ':');)
      if (!dir.empty())
        dirs.push_back(dir);
  }
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    dirs.push_back((exe.parent_path().parent_path() / "share" / "tilec" / "stdlib").string());
  return dirs;
}

bool parseDefine(const std::string &text, tilec::driver::DriverOptions &o) {
  auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    return false;
  o.defines[text.substr(0, eq)] = text.substr(eq + 1);
  return true;
}

/// CLI11 takes only one-character names after a single dash; the compiler-style options spelled
/// with one dash and several letters (-MD, -MF FILE, -MFFILE, -Werror) become their `--` forms
/// first.
std::vector<std::string> compilerStyleArgs(int argc, char **argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-MD" || a == "-MF" || a == "-Werror")
      args.push_back("-" + a);
    else if (a.rfind("-MF", 0) == 0) {
      args.push_back("--MF");
      args.push_back(a.substr(3));
    } else
      args.push_back(a);
  }
  return args;
}

} // namespace

int main(int argc, char **argv) {
  tilec::driver::DriverOptions opts;
  std::vector<std::string> defines;
  std::string emit;
  std::string layoutDetail = "summary";

  CLI::App app{"tilec: ahead-of-time compiler for .tile GPU kernels"};
  app.set_version_flag("--version", std::string("tilec 0.1.0 (LLVM 22, NVPTX and AMDGPU)"));
  app.require_subcommand(1);

  std::vector<std::string> inputs;
  std::string color = "auto";
  int jobs = 1;
  // bench and tune run kernels from their tile-level signatures, which thread IR does not keep.
  auto addCommon = [&](CLI::App *cmd, bool threadIR) {
    cmd->add_option("files", inputs,
                    threadIR ? "the .tile sources, or thread IR text (.thir)"
                             : "the .tile sources");
    cmd->add_flag("-w", opts.noWarnings, "print no warnings");
    cmd->add_flag("--Werror", opts.warningsAsErrors,
                  "-Werror: make warnings errors (nothing is written)");
    cmd->add_option("--color", color, "colour diagnostics: auto (on a terminal), always, never")
        ->check(CLI::IsMember({"auto", "always", "never"}));
    cmd->add_flag("--time-passes", opts.timePasses,
                  "print the wall time of each pass to stderr after compiling");
    // One value per flag, so that `-D X=1 FILE` does not take FILE as a second define.
    cmd->add_option("-D", defines, "NAME=VALUE: override a const or fix a symbolic dimension")
        ->allow_extra_args(false);
    cmd->add_option("-I", opts.includeDirs, "search DIR for imported modules (before the stdlib)")
        ->allow_extra_args(false);
  };
  auto addJobs = [&](CLI::App *cmd) {
    cmd->add_option("--jobs,-j", jobs,
                    "inputs compiled at once (default 1; 0: one per core); their messages are "
                    "printed in the order of the inputs")
        ->check(CLI::NonNegativeNumber);
  };
  // How code is generated: compile, bench and tune take the same flags, so that what bench
  // times and tune picks is what compile builds.
  auto addCodegen = [&](CLI::App *cmd) {
    cmd->add_flag("--precise-div", opts.preciseDiv,
                  "float32 '/' as IEEE division (default: div.full.f32, at most 2 ulp)");
    cmd->add_flag("--fast-math", opts.fastMath,
                  "tanh and sigmoid by tanh.approx.f32 (relative error ~2^-11, default ~1e-6); "
                  "exp and exp2 flush subnormal results to 0");
    auto *persistent = cmd->add_flag(
        "--persistent", opts.persistent,
        "every warp-specialized (sm_90a) kernel runs on as many blocks as fit on the GPU, each "
        "walking the grid's tiles (default: GEMM loops only)");
    cmd->add_flag("--no-persistent", opts.noPersistent,
                  "every warp-specialized kernel launches one block per grid block")
        ->excludes(persistent);
    auto *pingPong = cmd->add_flag(
        "--ping-pong", opts.pingPong,
        "the two consumer warpgroups of a warp-specialized loop with work beside its gemms take "
        "turns issuing their wgmma wherever the loop allows it (FlashAttention-3's scheduler "
        "barriers, with the overlap its whole schedule; default: where no overlap is planned and "
        "every gemm splits rows between the warpgroups, as attention at head dimension 64, "
        "docs/results.md)");
    cmd->add_flag("--no-ping-pong", opts.noPingPong, "the consumer warpgroups never take turns")
        ->excludes(pingPong);
    cmd->add_flag("--no-deferred-sums", opts.noDeferredSums,
                  "reduce every row sum across threads where it is computed, rather than once "
                  "after a loop that only accumulates it (attention's row sums, "
                  "FlashAttention-2's order)");
    cmd->add_flag("--no-score-warpgroup", opts.noScoreWarpgroup,
                  "split the scores of a warp-specialized loop over both consumer warpgroups as "
                  "its gemm policy says, rather than computing them and their softmax on "
                  "warpgroup 0 alone where the loop allows it (MLA decode, docs/results.md)");
    cmd->add_flag(
        "--split-wgmma-chains", opts.splitWgmmaChains,
        "deal the k-steps of a wgmma of narrow instructions (n <= 32, as W4A16's at "
        "decode shapes) to four accumulator chains summed after it, so that each "
        "instruction does not wait for the one before (level on an H100, docs/results.md)");
    cmd->add_flag("--defer-wgmma-waits", opts.deferWgmmaWaits,
                  "let each of a run of gemms (W4A16 dequantized group by group, into "
                  "accumulators of their own or one after another into one) multiply while the "
                  "threads compute the next one's operand, waiting once after the last");
    cmd->add_flag("--no-tma-prologue", opts.noTmaPrologue,
                  "the consumers of a warp-specialized loop load the tiles copied before it "
                  "(attention's Q) themselves, rather than the producer by TMA");
    auto *overlap = cmd->add_flag(
        "--overlap-gemms", opts.overlapGemms,
        "a warp-specialized loop's last gemm runs beside the next iteration's work wherever the "
        "loop allows it (attention's P@V beside the softmax, FlashAttention-3's overlap inside "
        "a warpgroup; default: where that gemm is at least 128 columns wide, as attention's P@V "
        "at head dimension 128, docs/results.md)");
    cmd->add_flag("--no-overlap-gemms", opts.noOverlapGemms,
                  "no loop overlaps its last gemm with the next iteration's work")
        ->excludes(overlap);
    cmd->add_flag("--ping-pong-tiles", opts.pingPongTiles,
                  "a persistent GEMM kernel (sm_90a) whose epilogue computes each tile apart runs "
                  "two consumer warpgroups per block, each on every other tile, so that one's "
                  "epilogue runs beside the other's main loop (CUTLASS's ping-pong schedule)");
    cmd->add_flag("--no-fma", opts.noFma,
                  "keep a * b + c as two rounded operations (default: may fuse into one fma, "
                  "as nvcc --fmad=true)");
  };
  // check runs the first passes only; compile takes any pass (--print-pipeline lists them).
  std::vector<std::string> checkDumps = {"parse", "sema", "ast", "tile-ir"};
  CLI::App *check = app.add_subcommand("check", "parse and verify only");
  addCommon(check, true);
  addJobs(check);
  check->add_option("--dump-after", opts.dumpAfter, "print the IR after a pass to stdout")
      ->check(CLI::IsMember(checkDumps));
  CLI::App *compile = app.add_subcommand("compile", "compile to a cubin and a C++ header");
  addCommon(compile, true);
  addJobs(compile);
  compile
      ->add_option("--dump-after", opts.dumpAfter,
                   "print the IR after PASS to stdout (a pass of --print-pipeline, or ast, "
                   "tile-ir, thread-ir)")
      ->check(CLI::IsMember(tilec::driver::dumpNames()));
  bool printPipeline = false;
  compile->add_flag("--print-pipeline", printPipeline, "list the passes of the compiler and exit");
  compile->add_option("-o", opts.outDir, "output directory (default: .)");
  compile->add_option("--arch", opts.arch,
                      "target GPU architecture: sm_80, sm_86, sm_89, sm_90, sm_90a (default), "
                      "or AMD's gfx90a, gfx942; a comma list of one vendor's");
  compile->add_option("--emit", emit,
                      "comma list of cubin,ptx,asm,llvm,header,c-header,layout (cubin: the "
                      "machine code, STEM.hsaco on AMD; asm: AMDGCN assembly, STEM.s)");
  compile->add_option("--namespace", opts.ns, "C++ namespace of the header (default: tile::STEM)");
  compile
      ->add_option("--embed", opts.embed,
                   "what the header embeds: cubin (default) or ptx (JIT-compiled at load)")
      ->check(CLI::IsMember({"cubin", "ptx"}));
  bool writeDepfile = false;
  compile->add_flag("--MD", writeDepfile,
                    "-MD: write a Make depfile listing the source and every imported module "
                    "(OUTDIR/STEM.d unless -MF names it)");
  compile->add_option("--MF", opts.depfile, "-MF FILE: the depfile's name (implies -MD)");
  addCodegen(compile);
  compile->add_option("--layout-detail", layoutDetail, "summary or full")
      ->check(CLI::IsMember({"summary", "full"}));

  // bench: --arch defaults to the device's; the rest of its options fill BenchOptions.
  tilec::driver::BenchOptions bench;
  std::string benchArch;
  std::vector<std::string> benchShapes, benchArgs;
  std::string benchBytes, benchCopy;
  std::optional<double> benchFlops;
  bool noFlush = false;
  CLI::App *benchCmd =
      app.add_subcommand("bench", "compile, then time the kernels on the GPU (Driver API)");
  addCommon(benchCmd, false);
  addCodegen(benchCmd);
  // What bench and tune share: the target, the arguments, and how launches are timed.
  auto addRunOptions = [](CLI::App *cmd, std::string &arch, std::vector<std::string> &args,
                          std::string &kernel, tilec::bench::RunOptions &run, bool &noFlush,
                          int &device) {
    cmd->add_option("--arch", arch, "target GPU architecture (default: the device's)");
    cmd->add_option("--arg", args, "NAME=VALUE[,...]: scalar parameters (default 1)")
        ->allow_extra_args(false);
    cmd->add_option("--kernel", kernel,
                    "the kernel to time (default: every kernel for bench, "
                    "the only one for tune)");
    cmd->add_option("--warmup", run.warmup,
                    fmt::format("launches before timing (default {})", run.warmup))
        ->check(CLI::Range(1, 100000));
    cmd->add_option("--reps", run.reps, fmt::format("timed launches (default {})", run.reps))
        ->check(CLI::Range(1, 100000));
    cmd->add_option("--seed", run.seed, "seed of the inputs' pseudo-random values");
    cmd->add_flag("--no-flush", noFlush, "do not flush the L2 cache before each launch");
    cmd->add_option("--device", device, "CUDA device ordinal (default 0)");
  };
  addRunOptions(benchCmd, benchArch, benchArgs, bench.kernel, bench.run, noFlush, bench.device);
  benchCmd
      ->add_option("--shape", benchShapes,
                   "NAME=VALUE[,NAME=VALUE...]: the symbolic dimensions (M=4096,N=4096)")
      ->allow_extra_args(false);
  benchCmd->add_option("--flops", benchFlops,
                       "FLOPs of one launch, for TFLOP/s (default: counted from the gemms)");
  benchCmd->add_option("--bytes", benchBytes,
                       "bytes one launch moves, for GB/s (default: every tensor once)");
  benchCmd->add_flag("--json", bench.json, "print JSON instead of text");
  benchCmd->add_option("--copy", benchCopy,
                       "SIZE: time a device-to-device copy of SIZE bytes (256MiB, 1GB), the "
                       "bandwidth reference");

  // tune: the space and shapes, and the bench options it shares.
  tilec::driver::TuneOptions tune;
  tune.run.warmup = 5;
  tune.run.reps = 30;
  std::string tuneArch, tuneSpace, tuneShapes;
  std::vector<std::string> tuneArgs;
  bool tuneNoFlush = false;
  CLI::App *tuneCmd = app.add_subcommand(
      "tune", "compile every variant of a space of -D values, time each on the GPU, and write a "
              "header holding the fastest per shape");
  addCommon(tuneCmd, false);
  addCodegen(tuneCmd);
  tuneCmd->add_option("--space", tuneSpace,
                      "the constants to vary: 'block_M=64,128;block_N=128,256;num_stages=3,4'");
  tuneCmd->add_option("--shapes", tuneShapes,
                      "the shapes to tune for: 'M=4096,N=4096,K=4096;M=8192,N=8192,K=8192'");
  addRunOptions(tuneCmd, tuneArch, tuneArgs, tune.kernel, tune.run, tuneNoFlush, tune.device);
  tuneCmd->add_option("--jobs,-j", tune.jobs, "parallel compiles (default: one per core)")
      ->check(CLI::Range(1, 256));
  tuneCmd->add_option("--record", tune.record,
                      "JSON record of every measurement: read first (what it holds is not "
                      "measured again), then written");
  tuneCmd->add_option("-o", tune.outDir, "write the tuned header STEM.h into this directory");
  tuneCmd->add_option("--namespace", tune.ns, "C++ namespace of the header (default tile::STEM)");
  tuneCmd->add_option("--rtol", tune.rtol,
                      "how far a variant's outputs may be from the first variant's (relative L2; "
                      "default 0.02 for 16-bit floats, 1e-3 for float32, exact for integers)");

  try {
    std::vector<std::string> args = compilerStyleArgs(argc, argv);
    std::reverse(args.begin(), args.end()); // CLI11 takes the arguments in reverse order
    app.parse(args);
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
  // -D values, and NAME=VALUE lists of one option into `out`; false after printing the error.
  auto parseDefines = [&]() {
    for (const std::string &d : defines)
      if (!parseDefine(d, opts)) {
        std::cerr << "tilec: error: -D expects NAME=VALUE, got '" << d << "'\n";
        return false;
      }
    return true;
  };
  auto parseLists = [](const std::vector<std::string> &lists, tilec::bench::Assignments &out,
                       const char *option) {
    std::string error;
    for (const std::string &list : lists)
      if (!tilec::bench::parseAssignments(list, out, error)) {
        std::cerr << "tilec: error: " << option << ": " << error << "\n";
        return false;
      }
    return true;
  };
  if (tuneCmd->parsed()) {
    if (!parseDefines())
      return 1;
    if (inputs.size() != 1) {
      std::cerr << "tilec: error: tune takes one .tile file\n";
      return 1;
    }
    std::string error;
    if (!tuneSpace.empty() && !tilec::bench::parseSpace(tuneSpace, tune.space, error)) {
      std::cerr << "tilec: error: --space: " << error << "\n";
      return 1;
    }
    if (!tilec::bench::parseShapes(tuneShapes, tune.shapes, error)) {
      std::cerr << "tilec: error: --shapes: " << error << "\n";
      return 1;
    }
    if (!parseLists(tuneArgs, tune.args, "--arg"))
      return 1;
    tune.run.flushL2 = !tuneNoFlush;
    opts.arch = tuneArch;
    opts.input = inputs.front();
    opts.stdlibDirs = stdlibDirs();
    tune.compile = opts;
    try {
      return tilec::driver::runTune(tune, std::cout, std::cerr);
    } catch (const std::exception &e) {
      std::cerr << "tilec: internal compiler error: " << e.what()
                << "\nplease report this with the input file\n";
      return 1;
    }
  }
  if (benchCmd->parsed()) {
    if (!parseDefines())
      return 1;
    if (inputs.size() > 1) {
      std::cerr << "tilec: error: bench takes one .tile file\n";
      return 1;
    }
    if (!parseLists(benchShapes, bench.shapes, "--shape") ||
        !parseLists(benchArgs, bench.args, "--arg"))
      return 1;
    if (!benchBytes.empty()) {
      std::optional<uint64_t> n = tilec::bench::parseByteSize(benchBytes);
      if (!n) {
        std::cerr << "tilec: error: --bytes expects a size such as 1048576 or 256MiB, got '"
                  << benchBytes << "'\n";
        return 1;
      }
      bench.bytes = static_cast<double>(*n);
    }
    if (!benchCopy.empty()) {
      bench.copyBytes = tilec::bench::parseByteSize(benchCopy);
      if (!bench.copyBytes || *bench.copyBytes % 4 != 0) {
        std::cerr << "tilec: error: --copy expects a size in bytes, a multiple of 4, such as "
                     "1073741824 or 1GiB, got '"
                  << benchCopy << "'\n";
        return 1;
      }
    }
    if (benchFlops && !(*benchFlops > 0)) {
      std::cerr << "tilec: error: --flops must be positive\n";
      return 1;
    }
    bench.flops = benchFlops;
    bench.run.flushL2 = !noFlush;
    opts.arch = benchArch;
    opts.input = inputs.empty() ? "" : inputs.front();
    const char *term = std::getenv("TERM");
    opts.color = color == "always" ||
                 (color == "auto" && ::isatty(STDERR_FILENO) && !std::getenv("NO_COLOR") &&
                  !(term && std::string_view(term) == "dumb"));
    opts.stdlibDirs = stdlibDirs();
    bench.compile = opts;
    try {
      return tilec::driver::runBench(bench, std::cout, std::cerr);
    } catch (const std::exception &e) {
      std::cerr << "tilec: internal compiler error: " << e.what()
                << "\nplease report this with the input file\n";
      return 1;
    }
  }
  // Required unless --print-pipeline: CLI11's own check would not know the exception.
  if (inputs.empty()) {
    std::cerr << "tilec: error: file is required\nrun 'tilec --help' for usage\n";
    return 1;
  }
  // Options that name one output cannot serve several inputs, and two inputs of one stem would
  // write the same outputs.
  if (inputs.size() > 1) {
    const char *single = !opts.depfile.empty()     ? "-MF"
                         : !opts.ns.empty()        ? "--namespace"
                         : !opts.dumpAfter.empty() ? "--dump-after"
                                                   : nullptr;
    if (single) {
      std::cerr << "tilec: error: " << single << " needs a single input file\n";
      return 1;
    }
    std::set<std::string> stems;
    for (const std::string &in : inputs)
      if (!stems.insert(std::filesystem::path(in).stem().string()).second) {
        std::cerr << "tilec: error: two input files named '"
                  << std::filesystem::path(in).stem().string()
                  << "' would write the same outputs\n";
        return 1;
      }
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
  // The C header's implementation includes the C++ header: emit both.
  if (opts.emit.count("c-header"))
    opts.emit.insert("header");
  opts.layoutDetailFull = layoutDetail == "full";
  // auto: colour only on a terminal that is not "dumb", and never under NO_COLOR.
  const char *term = std::getenv("TERM");
  opts.color = color == "always" ||
               (color == "auto" && ::isatty(STDERR_FILENO) && !std::getenv("NO_COLOR") &&
                !(term && std::string_view(term) == "dumb"));
  opts.stdlibDirs = stdlibDirs();
  // Each input is compiled on its own, as if by its own command; the status is 1 when any
  // failed, and the later ones are still compiled. With several jobs each input's output is
  // held until the earlier inputs' is printed, so the text does not depend on the timing.
  auto compileOne = [&](const std::string &in, std::ostream &out, std::ostream &err) {
    tilec::driver::DriverOptions one = opts;
    one.input = in;
    if (writeDepfile && one.depfile.empty())
      one.depfile =
          (std::filesystem::path(one.outDir) / (std::filesystem::path(in).stem().string() + ".d"))
              .string();
    try {
      return check->parsed() ? tilec::driver::runCheck(one, out, err)
                             : tilec::driver::runCompile(one, out, err);
    } catch (const std::exception &e) {
      err << "tilec: internal compiler error: " << e.what()
          << "\nplease report this with the input file\n";
      return 1;
    }
  };
  int status = 0;
  if (jobs == 1 || inputs.size() == 1) {
    for (const std::string &in : inputs)
      status = std::max(status, compileOne(in, std::cout, std::cerr));
    return status;
  }
  std::vector<std::ostringstream> outs(inputs.size()), errs(inputs.size());
  std::vector<int> statuses(inputs.size(), 0);
  tilec::driver::parallelFor(inputs.size(), jobs, [&](size_t i) {
    statuses[i] = compileOne(inputs[i], outs[i], errs[i]);
  });
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::cout << outs[i].str() << std::flush;
    std::cerr << errs[i].str() << std::flush;
    status = std::max(status, statuses[i]);
  }
  return status;
}
