// `tilec tune`: compiles every variant of a space of -D values in parallel, drops those that do
// not compile or fit, times the rest at each shape on the GPU, checks each against the first
// that ran, and writes a record of every measurement and a header holding each shape's winner
// with a dispatch by dimensions (docs/bench.md).
#pragma once

#include "bench/Runner.h"
#include "bench/Tune.h"
#include "bench/Workload.h"
#include "driver/Driver.h"

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace tilec::driver {

struct TuneOptions {
  /// The source, the fixed -D values, -I, the diagnostics options, --arch (empty: the device's).
  DriverOptions compile;
  std::vector<bench::Knob> space;
  std::vector<bench::Assignments> shapes;
  bench::Assignments args;
  std::string kernel; // the kernel to time when the program has several
  bench::RunOptions run;
  int device = 0;
  int jobs = 0;               // parallel compiles (0: one per hardware thread)
  std::string record;         // --record FILE: read (when it exists) to skip, then written
  std::string outDir;         // -o DIR: write the dispatch header there (empty: no header)
  std::string ns;             // --namespace of the header (default tile::STEM)
  std::optional<double> rtol; // agreement tolerance (default per dtype)
};

int runTune(const TuneOptions &opts, std::ostream &out, std::ostream &err);

} // namespace tilec::driver
