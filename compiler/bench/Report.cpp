#include "bench/Report.h"

#include <fmt/format.h>

namespace tilec::bench {

double tflops(double flops, double us) { return us > 0 ? flops / us * 1e-6 : 0; }
double gbps(double bytes, double us) { return us > 0 ? bytes / us * 1e-3 : 0; }

namespace {

std::string timingLine(const Timing &t, const RunOptions &run, std::string_view what) {
  return fmt::format("median {:.2f} us, min {:.2f}, max {:.2f} ({} {} after {} warm-up{})",
                     t.median, t.min, t.max, t.us.size(), what, run.warmup,
                     run.flushL2 ? ", L2 flushed before each" : ", L2 not flushed");
}

nlohmann::json timingJson(const Timing &t) {
  return {{"median", t.median}, {"min", t.min}, {"max", t.max}, {"all", t.us}};
}

} // namespace

std::string formatText(const BenchReport &r) {
  std::string out =
      fmt::format("device {}: {} (compute capability {}.{}, {} SMs)\n", r.device.ordinal,
                  r.device.name, r.device.ccMajor, r.device.ccMinor, r.device.multiprocessors);
  if (r.copy) {
    const auto &[bytes, t] = *r.copy;
    out += fmt::format("copy of {} bytes: {}\n  {:.1f} GB/s (bytes read and written)\n", bytes,
                       timingLine(t, r.run, "copies"),
                       gbps(2.0 * static_cast<double>(bytes), t.median));
  }
  for (const KernelReport &k : r.kernels) {
    std::string dims;
    for (const auto &[name, v] : k.dims)
      dims += fmt::format(" {}={}", name, v);
    out += fmt::format("{} ({}, --arch {}){}\n", k.name, r.source, r.arch, dims);
    out += fmt::format("  grid {} x {} x {}, {} threads, {} bytes of dynamic shared memory, {} "
                       "registers, {} bytes local, {} blocks per SM\n",
                       k.grid[0], k.grid[1], k.grid[2], k.threads, k.dynamicSharedBytes,
                       k.facts.registers, k.facts.localBytes, k.facts.blocksPerSM);
    out += "  " + timingLine(k.timing, r.run, "launches") + "\n";
    out += fmt::format("  {:.1f} GB/s", gbps(k.bytes, k.timing.median));
    if (k.flops && *k.flops > 0)
      out += fmt::format(", {:.1f} TFLOP/s", tflops(*k.flops, k.timing.median));
    out += "\n";
  }
  return out;
}

nlohmann::json toJson(const BenchReport &r) {
  nlohmann::json j;
  j["device"] = {{"ordinal", r.device.ordinal},
                 {"name", r.device.name},
                 {"compute_capability", fmt::format("{}.{}", r.device.ccMajor, r.device.ccMinor)},
                 {"multiprocessors", r.device.multiprocessors},
                 {"l2_bytes", r.device.l2Bytes}};
  j["run"] = {{"warmup", r.run.warmup},
              {"reps", r.run.reps},
              {"flush_l2", r.run.flushL2},
              {"seed", r.run.seed}};
  if (r.copy) {
    const auto &[bytes, t] = *r.copy;
    j["copy"] = {{"bytes", bytes},
                 {"us", timingJson(t)},
                 {"gbps", gbps(2.0 * static_cast<double>(bytes), t.median)}};
  }
  if (!r.source.empty()) {
    j["source"] = r.source;
    j["arch"] = r.arch;
    nlohmann::json defines = nlohmann::json::object();
    for (const auto &[name, value] : r.defines)
      defines[name] = value;
    j["defines"] = defines;
  }
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelReport &k : r.kernels) {
    nlohmann::json dims = nlohmann::json::object();
    for (const auto &[name, v] : k.dims)
      dims[name] = v;
    nlohmann::json kj = {{"name", k.name},
                         {"dims", dims},
                         {"grid", k.grid},
                         {"threads", k.threads},
                         {"dynamic_shared_bytes", k.dynamicSharedBytes},
                         {"registers", k.facts.registers},
                         {"local_bytes", k.facts.localBytes},
                         {"blocks_per_sm", k.facts.blocksPerSM},
                         {"us", timingJson(k.timing)},
                         {"bytes", k.bytes},
                         {"gbps", gbps(k.bytes, k.timing.median)}};
    if (k.flops) {
      kj["flops"] = *k.flops;
      kj["tflops"] = tflops(*k.flops, k.timing.median);
    }
    kernels.push_back(std::move(kj));
  }
  j["kernels"] = std::move(kernels);
  return j;
}

} // namespace tilec::bench
