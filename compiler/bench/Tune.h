// `tilec tune`'s search, without the GPU: the space of -D values and its variants, the shape
// buckets, the agreement check between variants, the record of measurements (JSON, reused by a
// later run), and the pick of a winner per bucket. The driver (driver/Tune.cpp) compiles and
// runs.
#pragma once

#include "bench/Runner.h"
#include "bench/Workload.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tilec::bench {

/// One knob of the space and its values, in the order given.
struct Knob {
  std::string name;
  std::vector<std::string> values;
};

/// Parses "block_M=64,128;block_N=128,256" (knobs separated by ';', values by ','). False and a
/// one-line `error` on an empty knob, a repeated name or no values.
bool parseSpace(std::string_view text, std::vector<Knob> &out, std::string &error);

/// Parses "M=4096,N=4096;M=8192,N=8192" into shape buckets (each an Assignments), in order.
bool parseShapes(std::string_view text, std::vector<Assignments> &out, std::string &error);

/// Every combination of the knobs' values, the first knob varying slowest; each a list of
/// (name, value) in knob order.
using Variant = std::vector<std::pair<std::string, std::string>>;
std::vector<Variant> enumerate(const std::vector<Knob> &space);

/// "block_M=64 block_N=128": how reports name a variant (and a bucket, from its Assignments).
std::string variantName(const Variant &v);
std::string shapeName(const Assignments &shape);

/// How far apart two runs' copies of one tensor are: relative L2 distance for floats (NaN where
/// one holds a NaN and the other not, or infinitely far apart), the fraction of differing
/// elements for integers and bools.
double tensorDistance(DType dtype, const std::vector<unsigned char> &a,
                      const std::vector<unsigned char> &b);
/// The default tolerance of tensorDistance between two variants: accumulation order differs
/// between block shapes, so a 16-bit output may differ in its last bit here and there.
double defaultTolerance(DType dtype);

/// One measurement, or why a variant did not run at a shape.
struct Measurement {
  std::string variant; // variantName
  std::string shape;   // shapeName
  /// "ok", "dropped" (compile error, does not fit, launch failed), "disagrees" (its output
  /// differs from the reference variant's beyond the tolerance).
  std::string status;
  std::string reason;
  Timing timing;
  KernelFacts facts;
  std::optional<double> tflops, gbps;
};

/// The record a run writes (--record) and a later run reads to skip what was measured: keyed by
/// the source's hash, the arch, the device and the kernel, so that a changed program is measured
/// again.
struct Record {
  std::string sourceHash, arch, device, kernel;
  std::vector<Measurement> measurements;
};
nlohmann::json toJson(const Record &r);
/// nullopt and `error` when the JSON is not a record.
std::optional<Record> recordFromJson(const nlohmann::json &j, std::string &error);
/// The earlier measurement of `variant` at `shape` in `r`, if its key matches.
const Measurement *findMeasurement(const Record &r, const std::string &variant,
                                   const std::string &shape);

/// The fastest "ok" measurement at each shape (by median), in the order of `shapes`; nullopt for
/// a shape where none ran.
std::vector<std::optional<Measurement>> winners(const std::vector<Measurement> &all,
                                                const std::vector<std::string> &shapes);

/// A 64-bit FNV-1a hash of `text` in hex: the record's key for a source.
std::string contentHash(std::string_view text);

} // namespace tilec::bench
