// What `tilec bench` prints: one line-oriented text block per measured kernel, or one JSON
// document (--json) with every launch's time, for scripts and for `tilec tune`'s record.
#pragma once

#include "bench/Runner.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tilec::bench {

struct KernelReport {
  std::string name;
  std::vector<std::pair<std::string, int64_t>> dims;
  std::array<int64_t, 3> grid = {1, 1, 1};
  int threads = 0;
  int dynamicSharedBytes = 0;
  KernelFacts facts;
  Timing timing;
  double bytes = 0;            // counted or given (--bytes)
  std::optional<double> flops; // counted or given (--flops)
};

struct BenchReport {
  DeviceInfo device;
  std::string arch;
  std::string source; // the .tile file as named on the command line
  std::vector<std::pair<std::string, std::string>> defines;
  RunOptions run;
  std::vector<KernelReport> kernels;
  /// --copy: the bytes copied and the copy's times.
  std::optional<std::pair<uint64_t, Timing>> copy;
};

/// Achieved rates from a median time in microseconds: TFLOP/s and GB/s (10^9 bytes per second).
double tflops(double flops, double us);
double gbps(double bytes, double us);

std::string formatText(const BenchReport &r);
nlohmann::json toJson(const BenchReport &r);

} // namespace tilec::bench
