// Runs planned launches (Workload.h) on a GPU through the Driver API and times them with CUDA
// events: inputs filled with seeded pseudo-random values, warm-up launches, the L2 cache flushed
// before each timed launch. What it does per parameter mirrors the generated header's launch
// function (HeaderGen.cpp): the same argument layout, tensor maps and shared-memory limit.
#pragma once

#include "bench/CudaDriver.h"
#include "bench/Workload.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tilec::bench {

struct RunOptions {
  int warmup = 10;
  int reps = 100;
  bool flushL2 = true;
  uint64_t seed = 2026;
};

struct Timing {
  std::vector<double> us; // each timed launch, in the order run
  double median = 0, min = 0, max = 0;
};
/// Fills median/min/max from `us`.
Timing summarize(std::vector<double> us);

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int ccMajor = 0, ccMinor = 0;
  int multiprocessors = 0;
  int64_t l2Bytes = 0;
  int maxSharedPerBlock = 0; // opt-in limit, bytes
};

/// What the driver reports of the loaded kernel.
struct KernelFacts {
  int registers = 0;
  int localBytes = 0;  // spills and stack per thread
  int blocksPerSM = 0; // occupancy at its block size and shared memory
};

struct RunResult {
  Timing timing;
  KernelFacts facts;
  /// With `captureOutputs`: every tensor's bytes after the first launch (in Launch::tensors
  /// order), the inputs as filled and the outputs as written.
  std::vector<std::vector<unsigned char>> tensors;
};

/// The tensors of a launch on the device, filled once with the seeded contents, with a pristine
/// copy beside them when asked: tune runs every variant of one shape on one set, each from the
/// same contents, without filling them again.
class TensorSet {
public:
  ~TensorSet();
  TensorSet(const TensorSet &) = delete;
  TensorSet &operator=(const TensorSet &) = delete;
  /// Whether `launch` takes tensors of these dtypes and sizes, in this order.
  bool fits(const Launch &launch) const;

private:
  friend class Runner;
  TensorSet() = default;
  struct Entry {
    DType dtype;
    uint64_t bytes;
    cu::DevicePtr live = 0, pristine = 0;
  };
  const cu::Driver *cu_ = nullptr;
  std::vector<Entry> entries_;
};

class Runner {
public:
  /// Opens the driver and device `ordinal` (its primary context). nullptr and a one-line
  /// `error` when there is no driver or no such device.
  static std::unique_ptr<Runner> open(int ordinal, std::string &error);
  ~Runner();
  Runner(const Runner &) = delete;
  Runner &operator=(const Runner &) = delete;

  const DeviceInfo &device() const { return info_; }
  /// The arch tilec compiles for to run on this device: sm_90a on 9.0, sm_80 on 8.x.
  std::string arch() const;

  /// Allocates the tensors of `launch` and fills them from opts.seed; with `keepPristine`, also
  /// a copy of each that run() restores them from before its first launch.
  std::unique_ptr<TensorSet> prepare(const Launch &launch, const RunOptions &opts,
                                     bool keepPristine, std::string &error);
  /// Loads `image` (a cubin, or PTX text that the driver compiles), then times `launch` on
  /// `tensors` (which must fit it).
  std::optional<RunResult> run(const Launch &launch, std::string_view image, TensorSet &tensors,
                               const RunOptions &opts, bool captureOutputs, std::string &error);
  /// The same on tensors of its own.
  std::optional<RunResult> run(const Launch &launch, std::string_view image, const RunOptions &opts,
                               bool captureOutputs, std::string &error);
  /// Times a device-to-device copy of `bytes` (cuMemcpyDtoDAsync), the bandwidth ceiling a
  /// memory-bound kernel is measured against.
  std::optional<Timing> timeCopy(uint64_t bytes, const RunOptions &opts, std::string &error);

private:
  Runner() = default;
  bool check(cu::Result r, std::string_view what, std::string &error) const;
  /// Times opts.reps calls of `enqueue` (each between two events, the L2 flushed before each
  /// unless opts.flushL2 is off); `what` names it in an error.
  std::optional<Timing> timeRepeated(const std::function<cu::Result()> &enqueue,
                                     std::string_view what, const RunOptions &opts,
                                     std::string &error);

  std::unique_ptr<cu::Driver> cu_;
  cu::Device dev_ = 0;
  cu::Context ctx_ = nullptr;
  DeviceInfo info_;
};

/// `n` bytes of the pseudo-random contents the runner fills a tensor of `dtype` with: floats
/// uniform in [-1, 1), integers uniform in [0, 16), bools 0 or 1; a function of `seed` alone.
std::vector<unsigned char> randomContents(DType dtype, uint64_t elements, uint64_t seed);

} // namespace tilec::bench
