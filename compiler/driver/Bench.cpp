#include "driver/Bench.h"

#include "bench/Report.h"
#include "driver/Pipeline.h"
#include "driver/Progress.h"

#include <fmt/format.h>

#include <filesystem>
#include <ostream>

namespace tilec::driver {

namespace {

int fail(std::ostream &err, const std::string &message) {
  err << "tilec: error: " << message << "\n";
  return 1;
}

/// The launches to time: every kernel of the program (or --kernel's), with its arguments fixed.
/// Empty and an error printed when a value is missing or wrong.
std::optional<std::vector<bench::Launch>> planLaunches(const BenchOptions &opts,
                                                       const Compilation &c, std::ostream &err) {
  const std::vector<tile::Kernel> &tk = c.program->kernels;
  const std::vector<thir::Kernel> &k = c.lowered->module.kernels;
  if (std::string e = bench::checkNames(tk, opts.shapes, opts.args); !e.empty()) {
    fail(err, e);
    return std::nullopt;
  }
  std::vector<bench::Launch> launches;
  bool found = opts.kernel.empty();
  for (size_t i = 0; i < tk.size() && i < k.size(); ++i) {
    if (!opts.kernel.empty() && tk[i].name != opts.kernel && tk[i].defName != opts.kernel)
      continue;
    found = true;
    std::string error;
    std::optional<bench::Launch> l = bench::planLaunch(tk[i], k[i], opts.shapes, opts.args, error);
    if (!l) {
      fail(err, error);
      return std::nullopt;
    }
    if (opts.bytes)
      l->bytes = static_cast<uint64_t>(*opts.bytes);
    if (opts.flops)
      l->flops = *opts.flops;
    launches.push_back(std::move(*l));
  }
  if (!found) {
    std::string names;
    for (const tile::Kernel &t : tk)
      names += (names.empty() ? "" : ", ") + t.name;
    fail(err, fmt::format("--kernel '{}': the program has no such kernel (its kernels: {})",
                          opts.kernel, names));
    return std::nullopt;
  }
  return launches;
}

} // namespace

int runBench(const BenchOptions &opts, std::ostream &out, std::ostream &err) {
  bool kernels = !opts.compile.input.empty();
  if (!kernels && !opts.copyBytes)
    return fail(err, "bench needs a .tile file, or --copy SIZE");
  std::string error;
  bench::BenchReport report;
  report.run = opts.run;
  std::unique_ptr<bench::Runner> runner;
  auto openDevice = [&]() {
    runner = bench::Runner::open(opts.device, error);
    if (runner)
      report.device = runner->device();
    return runner != nullptr;
  };

  // With --arch given, the program is compiled and its launches planned before the device is
  // opened, so that mistakes in the command are reported on any machine.
  DriverOptions compile = opts.compile;
  if (kernels && compile.arch.empty()) {
    if (!openDevice())
      return fail(err, error);
    compile.arch = runner->arch();
  }
  auto measure = [&](Compilation *c, const std::vector<bench::Launch> &launches) -> int {
    if (!runner && !openDevice())
      return fail(err, error);
    if (opts.copyBytes) {
      std::optional<bench::Timing> t = runner->timeCopy(*opts.copyBytes, opts.run, error);
      if (!t)
        return fail(err, error);
      report.copy = {*opts.copyBytes, *t};
    }
    if (c) {
      report.arch = c->target.arch;
      report.source = opts.compile.input;
      for (const auto &[name, value] : opts.compile.defines)
        report.defines.emplace_back(name, value);
      // The cubin when ptxas made one for the device's own arch, else PTX for the driver.
      std::string_view image =
          c->binary ? std::string_view(*c->binary) : std::string_view(c->assembly);
      Progress progress(err);
      for (size_t i = 0; i < launches.size(); ++i) {
        const bench::Launch &l = launches[i];
        progress.show(fmt::format("[kernel {}/{}] {}: {} launches", i + 1, launches.size(),
                                  l.kernel->name, opts.run.warmup + opts.run.reps));
        std::optional<bench::RunResult> r = runner->run(l, image, opts.run, false, error);
        progress.show("");
        if (!r)
          return fail(err, error);
        bench::KernelReport k;
        k.name = l.kernel->name;
        k.dims = l.dims;
        k.grid = l.grid;
        k.threads = l.kernel->threads;
        k.dynamicSharedBytes = l.kernel->dynamicSharedBytes;
        k.facts = r->facts;
        k.timing = r->timing;
        k.bytes = static_cast<double>(l.bytes);
        k.flops = l.flops;
        report.kernels.push_back(std::move(k));
      }
    }
    out << (opts.json ? bench::toJson(report).dump(2) + "\n" : bench::formatText(report));
    return 0;
  };
  if (!kernels)
    return measure(nullptr, {});
  return compileAndUse(compile, out, err, [&](Compilation &c) {
    std::optional<std::vector<bench::Launch>> launches = planLaunches(opts, c, err);
    if (!launches)
      return 1;
    return measure(&c, *launches);
  });
}

} // namespace tilec::driver
