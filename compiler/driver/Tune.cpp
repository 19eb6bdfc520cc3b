#include "driver/Tune.h"

#include "bench/Report.h"
#include "driver/HeaderGen.h"
#include "driver/Parallel.h"
#include "driver/Pipeline.h"
#include "driver/Progress.h"

#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <sstream>

#include <unistd.h>

namespace tilec::driver {

namespace fs = std::filesystem;

namespace {

int fail(std::ostream &err, const std::string &message) {
  err << "tilec: error: " << message << "\n";
  return 1;
}

/// One point of the space after compiling it.
struct Compiled {
  bench::Variant variant;
  std::string name;
  bool ok = false;
  std::string reason; // why it did not compile
  std::string warnings;
  std::optional<tile::Program> program;
  std::optional<thir::Module> module;
  std::optional<std::string> cubin;
  std::string ptx;
};

/// The first error of a compile's diagnostics, on one line.
std::string firstError(const std::string &text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find("error: ") != std::string::npos)
      return line;
  return "compile failed";
}

/// Compiles every variant, `jobs` at a time: each is a whole compilation of its own (its own
/// sources, diagnostics and LLVM context), so they share nothing.
std::vector<Compiled> compileAll(const TuneOptions &opts, const std::string &arch,
                                 const std::vector<bench::Variant> &variants, Progress &progress) {
  std::vector<Compiled> out(variants.size());
  std::atomic<size_t> done{0};
  parallelFor(variants.size(), opts.jobs, [&](size_t i) {
    Compiled &c = out[i];
    c.variant = variants[i];
    c.name = bench::variantName(variants[i]);
    DriverOptions o = opts.compile;
    o.arch = arch;
    o.color = false;
    o.timePasses = false;
    for (const auto &[name, value] : variants[i])
      o.defines[name] = value;
    std::ostringstream sout, serr;
    int status = compileAndUse(o, sout, serr, [&](Compilation &comp) {
      c.program = *comp.program;
      c.module = comp.lowered->module;
      c.cubin = comp.binary;
      c.ptx = comp.assembly;
      return 0;
    });
    c.ok = status == 0;
    c.warnings = serr.str();
    if (!c.ok)
      c.reason = firstError(serr.str());
    progress.show(fmt::format("[compiled {}/{}]", ++done, variants.size()));
  });
  return out;
}

/// The index of the kernel to tune: --kernel's, or the program's only one.
std::optional<size_t> pickKernel(const tile::Program &p, const std::string &name,
                                 std::string &error) {
  std::string names;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    if (p.kernels[i].name == name || p.kernels[i].defName == name)
      return i;
    names += (names.empty() ? "" : ", ") + p.kernels[i].name;
  }
  if (name.empty() && p.kernels.size() == 1)
    return 0;
  error = name.empty() ? fmt::format("the program has several kernels; name the one to tune "
                                     "with --kernel (its kernels: {})",
                                     names)
                       : fmt::format("--kernel '{}': the program has no such kernel (its "
                                     "kernels: {})",
                                     name, names);
  return std::nullopt;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// Writes `text` to `path` through a temporary and a rename (no partial file on failure).
bool writeFile(const fs::path &path, const std::string &text) {
  fs::path tmp =
      path.parent_path() / fmt::format(".{}.tmp{}", path.filename().string(), ::getpid());
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  std::error_code ec;
  if (out)
    fs::rename(tmp, path, ec);
  if (!out || ec) {
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

std::string rateText(const bench::Measurement &m) {
  if (m.tflops && *m.tflops > 0)
    return fmt::format("{:.1f} TFLOP/s", *m.tflops);
  if (m.gbps)
    return fmt::format("{:.1f} GB/s", *m.gbps);
  return "";
}

int runTuneWith(const TuneOptions &opts, std::ostream &out, std::ostream &err) {
  if (opts.space.empty())
    return fail(err, "tune needs --space NAME=V1,V2;... (or @tune(space=...) on the kernel)");
  if (opts.shapes.empty())
    return fail(err, "tune needs --shapes 'NAME=V,...;...' (or @tune(shapes=...) on the kernel)");
  for (const bench::Knob &k : opts.space)
    if (opts.compile.defines.count(k.name))
      return fail(err, fmt::format("--space '{}' is also fixed by -D", k.name));
  std::error_code ec;
  if (!opts.outDir.empty() && !fs::is_directory(opts.outDir, ec))
    return fail(err, fmt::format("output directory '{}' does not exist", opts.outDir));
  std::string stem = fs::path(opts.compile.input).stem().string();
  std::string ns = opts.ns.empty() ? defaultNamespace(stem) : opts.ns;
  if (!isValidNamespace(ns))
    return fail(err, fmt::format("--namespace '{}' is not a valid C++ namespace name", ns));

  std::string error;
  std::unique_ptr<bench::Runner> runner;
  std::string arch = opts.compile.arch;
  if (arch.empty()) {
    runner = bench::Runner::open(opts.device, error);
    if (!runner)
      return fail(err, error);
    arch = runner->arch();
  }

  std::vector<bench::Variant> variants = bench::enumerate(opts.space);
  Progress progress(err);
  std::vector<Compiled> compiled = compileAll(opts, arch, variants, progress);
  progress.show("");
  // A knob that names nothing is a typo, not a dimension of the search.
  for (const Compiled &c : compiled)
    for (const auto &knob : c.variant)
      if (c.program &&
          std::count(c.program->unusedDefines.begin(), c.program->unusedDefines.end(), knob.first))
        return fail(err,
                    fmt::format("--space: -D {} names no constant of the program", knob.first));
  const Compiled *first = nullptr;
  for (const Compiled &c : compiled)
    if (c.ok && !first)
      first = &c;
  if (!first) {
    // Every variant failed: the program itself is wrong, or every point of the space is.
    err << compiled.front().warnings;
    return fail(err, fmt::format("none of the {} variants compiles", compiled.size()));
  }
  std::optional<size_t> kernelIndex = pickKernel(*first->program, opts.kernel, error);
  if (!kernelIndex)
    return fail(err, error);
  const tile::Kernel &tk0 = first->program->kernels[*kernelIndex];
  // Names and shapes checked once, before the GPU is needed.
  std::vector<std::string> shapeNames;
  for (const bench::Assignments &shape : opts.shapes) {
    if (std::string e = bench::checkNames({tk0}, shape, opts.args); !e.empty())
      return fail(err, e);
    shapeNames.push_back(bench::shapeName(shape));
  }

  bench::Record record;
  std::optional<bench::Record> previous;
  std::string source = readFile(opts.compile.input);
  if (!opts.record.empty() && fs::exists(opts.record, ec)) {
    nlohmann::json j = nlohmann::json::parse(readFile(opts.record), nullptr, false);
    if (j.is_discarded())
      return fail(err, fmt::format("--record '{}' is not JSON", opts.record));
    previous = bench::recordFromJson(j, error);
    if (!previous)
      return fail(err, fmt::format("--record '{}': {}", opts.record, error));
  }
  if (!runner) {
    runner = bench::Runner::open(opts.device, error);
    if (!runner)
      return fail(err, error);
  }
  std::string fixed;
  for (const auto &[name, value] : opts.compile.defines)
    fixed += fmt::format(" -D{}={}", name, value);
  // Measurements of another code generation are not this one's.
  fixed += codegenFlags(opts.compile);
  record.sourceHash = bench::contentHash(source + "\n" + fixed);
  record.arch = arch;
  record.device = runner->device().name;
  record.kernel = tk0.name;
  bool reuse = previous && previous->sourceHash == record.sourceHash &&
               previous->arch == record.arch && previous->device == record.device &&
               previous->kernel == record.kernel;

  out << fmt::format(
      "tune {} ({}), {} variants, --arch {}, {} ({} compiled)\n", opts.compile.input, tk0.name,
      compiled.size(), arch, runner->device().name,
      std::count_if(compiled.begin(), compiled.end(), [](const Compiled &c) { return c.ok; }));
  for (const Compiled &c : compiled)
    if (!c.ok)
      out << fmt::format("  dropped {}: {}\n", c.name, c.reason);

  for (size_t s = 0; s < opts.shapes.size(); ++s) {
    const bench::Assignments &shape = opts.shapes[s];
    out << fmt::format("shape {}\n", shapeNames[s]);
    // One set of tensors for every variant at this shape, filled once and restored before each.
    std::unique_ptr<bench::TensorSet> tensors;
    std::vector<std::vector<unsigned char>> reference;
    std::vector<DType> referenceTypes;
    std::string referenceName;
    size_t ran = 0;
    for (const Compiled &c : compiled) {
      if (!c.ok)
        continue;
      progress.show(
          fmt::format("[shape {}/{}, variant {}] {}", s + 1, opts.shapes.size(), ++ran, c.name));
      bench::Measurement m;
      m.variant = c.name;
      m.shape = shapeNames[s];
      if (const bench::Measurement *old =
              reuse ? bench::findMeasurement(*previous, c.name, m.shape) : nullptr) {
        m = *old;
        progress.show("");
        out << fmt::format("  {:<48} {}\n", c.name,
                           m.status == "ok" ? fmt::format("{:>10.2f} us  {} (recorded)",
                                                          m.timing.median, rateText(m))
                                            : fmt::format("{} (recorded): {}", m.status, m.reason));
        record.measurements.push_back(std::move(m));
        continue;
      }
      const tile::Kernel &tk = c.program->kernels[*kernelIndex];
      const thir::Kernel &k = c.module->kernels[*kernelIndex];
      std::optional<bench::Launch> launch = bench::planLaunch(tk, k, shape, opts.args, error);
      std::optional<bench::RunResult> result;
      if (launch) {
        std::string_view image = c.cubin ? std::string_view(*c.cubin) : std::string_view(c.ptx);
        if (!tensors || !tensors->fits(*launch))
          tensors = runner->prepare(*launch, opts.run, /*keepPristine=*/true, error);
        if (tensors)
          result = runner->run(*launch, image, *tensors, opts.run, true, error);
      }
      if (!result) {
        m.status = "dropped";
        m.reason = error;
      } else {
        m.timing = result->timing;
        m.facts = result->facts;
        m.gbps = bench::gbps(static_cast<double>(launch->bytes), m.timing.median);
        if (launch->flops)
          m.tflops = bench::tflops(*launch->flops, m.timing.median);
        m.status = "ok";
        if (reference.empty()) {
          reference = std::move(result->tensors);
          for (const bench::TensorArg &t : launch->tensors)
            referenceTypes.push_back(t.dtype);
          referenceName = c.name;
        } else {
          for (size_t t = 0; t < reference.size() && t < result->tensors.size(); ++t) {
            double d = bench::tensorDistance(referenceTypes[t], reference[t], result->tensors[t]);
            double tol = opts.rtol ? *opts.rtol : bench::defaultTolerance(referenceTypes[t]);
            if (!(d <= tol)) {
              m.status = "disagrees";
              m.reason = fmt::format("tensor '{}' differs from variant {}'s by {:.3g} (tolerance "
                                     "{:.3g})",
                                     launch->tensors[t].name, referenceName, d, tol);
              break;
            }
          }
        }
      }
      progress.show("");
      if (m.status == "ok")
        out << fmt::format(
            "  {:<48} {:>10.2f} us  {}{}\n", c.name, m.timing.median, rateText(m),
            m.facts.localBytes ? fmt::format(" ({} bytes local: spills)", m.facts.localBytes) : "");
      else
        out << fmt::format("  {:<48} {}: {}\n", c.name, m.status, m.reason);
      record.measurements.push_back(std::move(m));
    }
  }

  std::vector<std::optional<bench::Measurement>> best =
      bench::winners(record.measurements, shapeNames);
  for (size_t s = 0; s < best.size(); ++s)
    out << (best[s] ? fmt::format("winner at {}: {} ({:.2f} us, {})\n", shapeNames[s],
                                  best[s]->variant, best[s]->timing.median, rateText(*best[s]))
                    : fmt::format("no variant ran at {}\n", shapeNames[s]));
  if (!opts.record.empty() && !writeFile(opts.record, toJson(record).dump(2) + "\n"))
    return fail(err, fmt::format("cannot write the record '{}'", opts.record));

  if (!opts.outDir.empty()) {
    std::vector<DispatchVariant> variantsOut;
    std::vector<DispatchBucket> buckets;
    std::vector<const Compiled *> used;
    for (size_t s = 0; s < best.size(); ++s) {
      if (!best[s])
        return fail(err, fmt::format("no header: no variant ran at {}", shapeNames[s]));
      auto it = std::find_if(compiled.begin(), compiled.end(),
                             [&](const Compiled &c) { return c.name == best[s]->variant; });
      size_t index = std::find(used.begin(), used.end(), &*it) - used.begin();
      if (index == used.size())
        used.push_back(&*it);
      DispatchBucket b;
      b.winner = index;
      for (const tile::VarPtr &d : tk0.dims)
        if (auto v = opts.shapes[s].find(d->name); v != opts.shapes[s].end())
          // A variant ran at this shape, so its values parsed (planLaunch).
          b.dims.emplace_back(d->name, bench::parseInt(v->second).value_or(0));
      buckets.push_back(std::move(b));
    }
    for (size_t v = 0; v < used.size(); ++v) {
      const Compiled &c = *used[v];
      HeaderImage image{&*c.module, arch, c.cubin ? std::string_view(*c.cubin) : c.ptx,
                        c.cubin ? BinaryKind::Cubin : BinaryKind::Ptx};
      variantsOut.push_back({image, fmt::format("variant{}", v), c.name});
    }
    HeaderOptions ho;
    ho.ns = ns;
    ho.sourceName = fs::path(opts.compile.input).filename().string();
    fs::path path = fs::path(opts.outDir) / (stem + ".h");
    if (!writeFile(path, generateDispatchHeader(variantsOut, buckets, ho)))
      return fail(err, fmt::format("cannot write '{}'", path.string()));
    out << fmt::format("wrote {} ({} variant{})\n", path.string(), used.size(),
                       used.size() == 1 ? "" : "s");
  }
  return 0;
}

} // namespace

int runTune(const TuneOptions &opts, std::ostream &out, std::ostream &err) {
  if (opts.compile.input.empty())
    return fail(err, "tune needs a .tile file");
  TuneOptions declared;
  if (opts.space.empty() || opts.shapes.empty()) {
    // What the command line leaves out may come from the kernel's @tune decorator.
    declared = opts;
    DriverOptions front = opts.compile;
    front.arch = front.arch.empty() ? target::defaultTarget().arch : front.arch;
    int status = compileAndUse(
        front, out, err,
        [&](Compilation &c) {
          std::string error;
          std::optional<size_t> k = pickKernel(*c.program, opts.kernel, error);
          if (!k)
            return fail(err, error);
          const std::optional<tile::TuneDecl> &decl = c.program->kernels[*k].tune;
          auto report = [&](SourceLoc loc, const std::string &message) {
            c.diags.error(loc, message);
            err << c.diags.render(c.diags.diagnostics().back());
            return 1;
          };
          if (declared.space.empty() && decl && !decl->space.empty() &&
              !bench::parseSpace(decl->space, declared.space, error))
            return report(decl->spaceLoc, "@tune(space=...): " + error);
          if (declared.shapes.empty() && decl && !decl->shapes.empty() &&
              !bench::parseShapes(decl->shapes, declared.shapes, error))
            return report(decl->shapesLoc, "@tune(shapes=...): " + error);
          return 0;
        },
        /*frontEndOnly=*/true);
    if (status != 0)
      return status;
    return runTuneWith(declared, out, err);
  }
  return runTuneWith(opts, out, err);
}

} // namespace tilec::driver
