// The header `tilec tune` writes: its winning variants, each a generated header of its own in a
// nested namespace, and launch functions that pick a variant by the launch's dimensions.
#include "driver/HeaderGen.h"

#include <fmt/format.h>

#include <stdexcept>

namespace tilec::driver {

namespace {

[[noreturn]] void bug(const std::string &what) {
  throw std::logic_error("dispatch header: " + what);
}

/// The dispatch of one kernel: the buckets' dimension values in the order of the kernel's Dim
/// parameters, the winner of each, and a launch function that forwards to it.
std::string dispatchKernel(const std::vector<DispatchVariant> &variants,
                           const std::vector<DispatchBucket> &buckets, size_t kernel) {
  const thir::Kernel &k = variants.front().image.module->kernels[kernel];
  LaunchSignature sig = launchSignature(k);
  for (const DispatchVariant &v : variants) {
    LaunchSignature other = launchSignature(v.image.module->kernels.at(kernel));
    bool same = other.function == sig.function && other.params.size() == sig.params.size();
    for (size_t i = 0; same && i < sig.params.size(); ++i)
      same =
          other.params[i].type == sig.params[i].type && other.params[i].name == sig.params[i].name;
    if (!same)
      bug(fmt::format("variant '{}' launches '{}' with other arguments", v.description, k.name));
  }
  std::vector<const LaunchParam *> dims;
  for (const LaunchParam &p : sig.params)
    if (p.param->kind == thir::ParamKind::Dim)
      dims.push_back(&p);

  std::string out;
  std::string dimArgs, dimNames;
  for (const LaunchParam *d : dims) {
    dimArgs += fmt::format("{}::std::int64_t {}", dimArgs.empty() ? "" : ", ", d->name);
    dimNames += fmt::format("{}{}", dimNames.empty() ? "" : ", ", d->name);
  }
  out +=
      fmt::format("/// Which variant `{}` launches at these dimensions: the winner of the nearest "
                  "tuned shape.\ninline int {}_variant({}) {{\n",
                  k.name, sig.function, dimArgs.empty() ? "" : dimArgs);
  if (dims.empty()) {
    out += fmt::format("  return {};\n}}\n\n", buckets.front().winner);
  } else {
    out +=
        fmt::format("  static constexpr double kBuckets[{}][{}] = {{", buckets.size(), dims.size());
    for (size_t b = 0; b < buckets.size(); ++b) {
      out += b ? ", {" : "{";
      for (size_t d = 0; d < dims.size(); ++d) {
        int64_t v = 0;
        bool found = false;
        for (const auto &[name, value] : buckets[b].dims)
          if (name == dims[d]->param->name) {
            v = value;
            found = true;
          }
        if (!found)
          bug(fmt::format("a bucket has no value for '{}'", dims[d]->param->name));
        out += fmt::format("{}{}.0", d ? ", " : "", v);
      }
      out += "}";
    }
    out += "};\n  static constexpr int kWinner[] = {";
    for (size_t b = 0; b < buckets.size(); ++b)
      out += fmt::format("{}{}", b ? ", " : "", buckets[b].winner);
    out += "};\n";
    out += fmt::format("  const double dims[] = {{{}}};\n", [&] {
      std::string s;
      for (const LaunchParam *d : dims)
        s += fmt::format("{}static_cast<double>({})", s.empty() ? "" : ", ", d->name);
      return s;
    }());
    out += fmt::format("  int best = 0;\n  double bestDistance = 0;\n"
                       "  for (int b = 0; b < {0}; ++b) {{\n"
                       "    double distance = 0;\n"
                       "    for (int d = 0; d < {1}; ++d)\n"
                       "      distance += ::std::fabs(::std::log((dims[d] > 0 ? dims[d] : 1.0) / "
                       "kBuckets[b][d]));\n"
                       "    if (b == 0 || distance < bestDistance) {{\n"
                       "      best = b;\n      bestDistance = distance;\n    }}\n  }}\n"
                       "  return kWinner[best];\n}}\n\n",
                       buckets.size(), dims.size());
  }
  std::string params, args;
  for (const LaunchParam &p : sig.params) {
    params += fmt::format(", {} {}", p.type, p.name);
    args += fmt::format(", {}", p.name);
  }
  out += fmt::format("/// Launches `{}` through the variant {}_variant() picks.\n"
                     "inline ::CUresult {}(::CUstream stream{}) {{\n  switch ({}_variant({})) {{\n",
                     k.name, sig.function, sig.function, params, sig.function, dimNames);
  for (size_t v = 0; v < variants.size(); ++v)
    out += fmt::format("  case {}:\n    return {}::{}(stream{});\n", v, variants[v].ns,
                       sig.function, args);
  out += "  }\n  return ::CUDA_ERROR_INVALID_VALUE;\n}\n\n";
  return out;
}

} // namespace

std::string generateDispatchHeader(const std::vector<DispatchVariant> &variants,
                                   const std::vector<DispatchBucket> &buckets,
                                   const HeaderOptions &opts) {
  if (variants.empty() || buckets.empty())
    bug("no variants or no buckets");
  for (const DispatchBucket &b : buckets)
    if (b.winner >= variants.size())
      bug("a bucket's winner is out of range");
  std::string out = fmt::format(
      "// Generated by tilec tune from {}. Do not edit.\n"
      "// {} variant(s) of the program, each the winner of a tuned shape, and launch functions\n"
      "// that pick one by the launch's dimensions (the nearest tuned shape's winner).\n"
      "#pragma once\n",
      opts.sourceName, variants.size());
  for (size_t v = 0; v < variants.size(); ++v) {
    HeaderOptions vo = opts;
    vo.ns = opts.ns + "::" + variants[v].ns;
    out += fmt::format("\n// ---- {}::{}: {}\n", opts.ns, variants[v].ns, variants[v].description);
    std::string text = generateHeader({variants[v].image}, vo);
    if (size_t at = text.find("#pragma once\n"); at != std::string::npos)
      text.erase(at, 13);
    out += text;
  }
  out += "\n#include <cmath>\n\n";
  out += fmt::format("namespace {} {{\n\n", opts.ns);
  out += "/// The shapes the tuner measured and the variant that won each:\n";
  for (const DispatchBucket &b : buckets) {
    std::string dims;
    for (const auto &[name, value] : b.dims)
      dims += fmt::format("{}{}={}", dims.empty() ? "" : " ", name, value);
    out += fmt::format("///   {} -> {} ({})\n", dims, variants[b.winner].ns,
                       variants[b.winner].description);
  }
  out +=
      "\n/// Loads every variant's module into the current context.\ninline ::CUresult load() {\n";
  for (const DispatchVariant &v : variants)
    out +=
        fmt::format("  if (::CUresult r = {}::load(); r != ::CUDA_SUCCESS)\n    return r;\n", v.ns);
  out += "  return ::CUDA_SUCCESS;\n}\n\n/// Unloads every variant's module from every context.\n"
         "inline void unload() {\n";
  for (const DispatchVariant &v : variants)
    out += fmt::format("  {}::unload();\n", v.ns);
  out += fmt::format("}}\n\n/// Why the last failed launch or load on this thread failed.\n"
                     "inline const char *last_error() {{ return {}::last_error(); }}\n\n",
                     variants.front().ns);
  for (size_t k = 0; k < variants.front().image.module->kernels.size(); ++k)
    out += dispatchKernel(variants, buckets, k);
  out += fmt::format("}} // namespace {}\n", opts.ns);
  return out;
}

} // namespace tilec::driver
