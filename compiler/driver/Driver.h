// The compiler driver: runs the pipeline for `tilec check` and `tilec compile` and writes the
// outputs. The CLI (main.cpp) only parses options into these structs.
#pragma once

#include "target/TargetInfo.h"

#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tilec::driver {

struct DriverOptions {
  std::string input;
  std::string outDir = ".";
  std::string arch = target::defaultTarget().arch;
  std::map<std::string, std::string> defines;
  std::vector<std::string> includeDirs;
  std::set<std::string> emit = {"cubin", "header"};
  std::string ns;
  bool layoutDetailFull = false;
  /// float32 division as IEEE div.rn instead of div.full (<= 2 ulp).
  bool preciseDiv = false;
  /// tanh and sigmoid by tanh.approx.f32 (relative error about 2^-11) instead of ~1e-6.
  bool fastMath = false;
  /// Keep a * b + c as two rounded operations (no fused multiply-add).
  bool noFma = false;
  /// --persistent / --no-persistent: every warp-specialized kernel is persistent (launched on as
  /// many blocks as fit on the device, each walking the grid's tiles), or none is; neither: the
  /// GEMM loops are.
  bool persistent = false;
  bool noPersistent = false;
  /// --ping-pong: the consumer warpgroups of a warp-specialized loop with work beside its gemms
  /// take turns issuing their wgmma wherever they are fit for it (lower::PingPong::On).
  bool pingPong = false;
  /// --no-ping-pong: they never do (lower::PingPong::Off); neither: where the turns pay.
  bool noPingPong = false;
  bool noTmaPrologue = false;
  /// --no-deferred-sums: every row sum is reduced across threads where it is computed (no
  /// defer-row-sums).
  bool noDeferredSums = false;
  /// --no-score-warpgroup: no plan-score-warpgroup (the scores split as their gemm policy says).
  bool noScoreWarpgroup = false;
  /// --split-wgmma-chains: a narrow wgmma's k-steps accumulate in four independent chains
  /// (schedule::splitWgmmaChains).
  bool splitWgmmaChains = false;
  /// --defer-wgmma-waits: a run of independent gemms leaves each wgmma group in flight until
  /// the last one's wait (schedule::deferWgmmaWaits).
  bool deferWgmmaWaits = false;
  /// --overlap-gemms: attention-like loops overlap their last gemm with the next iteration's
  /// work (lower::PlanOptions::overlapGemms).
  bool overlapGemms = false;
  /// --no-overlap-gemms: no loop overlaps its last gemm (lower::GemmOverlap::Off).
  bool noOverlapGemms = false;
  /// --ping-pong-tiles: a persistent GEMM kernel's consumers form two groups, each on its own
  /// tiles (lower::PlanOptions::pingPongTiles).
  bool pingPongTiles = false;
  /// What the header embeds: "cubin" (machine code for --arch only) or "ptx" (compiled by the
  /// driver at load, so it also runs on newer GPUs, e.g. an sm_80 build on an H200).
  std::string embed = "cubin";
  /// Print a stage's output to stdout: "ast", "tile-ir" or "thread-ir".
  std::string dumpAfter;
  /// Where the stdlib may be (directories holding std/...), searched in order after includeDirs:
  /// those of TILEC_STDLIB_PATH, then the one shipped next to the binary.
  std::vector<std::string> stdlibDirs;
  /// -MD/-MF: where to write a Make depfile (the outputs depend on the source and every module
  /// it imported); empty: none.
  std::string depfile;
  /// -w: no warnings; -Werror: warnings are errors (-w wins); --color: ANSI colours.
  bool noWarnings = false;
  bool warningsAsErrors = false;
  bool color = false;
  /// Print the wall time of each pass (and of the header) to the error stream at the end.
  bool timePasses = false;
};

/// Each returns the process exit status: 0 on success, 1 when an error was reported.
/// The code-generation flags `opts` sets (" --fast-math --persistent", ...; empty for the
/// defaults): what, besides the source and its -D values, decides the code a kernel gets.
std::string codegenFlags(const DriverOptions &opts);

int runCheck(const DriverOptions &opts, std::ostream &out, std::ostream &err);
int runCompile(const DriverOptions &opts, std::ostream &out, std::ostream &err);

/// The emit kinds `--emit` accepts.
const std::vector<std::string> &emitKinds();

} // namespace tilec::driver
