// `tilec bench`: compiles a .tile program in memory and times its kernels on the GPU through
// the Driver API (compiler/bench). The CLI (main.cpp) only parses options into BenchOptions.
#pragma once

#include "bench/Runner.h"
#include "bench/Workload.h"
#include "driver/Driver.h"

#include <iosfwd>
#include <optional>
#include <string>

namespace tilec::driver {

struct BenchOptions {
  /// The source, -D, -I, the diagnostics options, and --arch (empty: the one the device runs).
  DriverOptions compile;
  bench::Assignments shapes; // --shape: symbolic dimensions
  bench::Assignments args;   // --arg: scalar parameters
  std::string kernel;        // --kernel: only this one (default: every kernel of the file)
  bench::RunOptions run;
  int device = 0;
  std::optional<double> flops, bytes; // --flops, --bytes: instead of the counted ones
  bool json = false;
  /// --copy SIZE: time a device-to-device copy of SIZE bytes instead of (or before) kernels.
  std::optional<uint64_t> copyBytes;
};

/// Returns the exit status: 0 after printing the measurements, 1 after an error (a compile
/// error, a missing --shape, no GPU).
int runBench(const BenchOptions &opts, std::ostream &out, std::ostream &err);

} // namespace tilec::driver
