// What the interpreter tests share: programs compiled through the pipeline up to code
// generation, random 16-bit inputs, a launch by parameter names, the relative error.
#pragma once

#include "driver/Pipeline.h"
#include "threadir/Interpreter.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace tilec::testing {

/// `name` under samples/, or a path from the source root.
inline std::string samplePath(const std::string &name) {
  return std::string(TILEC_SOURCE_ROOT) + "/" +
         (name.find('/') == std::string::npos ? "samples/" + name : name);
}

/// The thread IR of `file` (a sample, or a path from the source root) for `arch` after -D
/// `defines`, as `tilec compile` hands it to code generation: every pass before build-llvm
/// (barriers, fences and the wgmma schedules included). `options` sets other command-line
/// options (--persistent, --defer-wgmma-waits, ...).
inline thir::Module
compileSample(const std::string &file, const char *arch,
              std::map<std::string, std::string> defines = {},
              const std::function<void(driver::DriverOptions &)> &options = {}) {
  driver::DriverOptions o;
  o.input = samplePath(file);
  o.arch = arch;
  o.defines = std::move(defines);
  o.stdlibDirs = {std::string(TILEC_SOURCE_ROOT) + "/stdlib"};
  if (options)
    options(o);
  SourceManager sm;
  DiagnosticEngine diags(sm);
  driver::Compilation c(o, sm, diags, *target::targetInfo(arch));
  const auto &passes = driver::compilePipeline();
  size_t codegen = 0;
  while (codegen < passes.size() && passes[codegen].name != "build-llvm")
    ++codegen;
  std::ostringstream dump;
  REQUIRE_MESSAGE(driver::runPipeline(c, 0, codegen, dump), diags.renderAll());
  return std::move(c.lowered->module);
}

inline uint16_t toHalf(float f) {
  auto h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
inline float fromHalf(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return static_cast<float>(h);
}
inline uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
inline float fromBf16(uint16_t b) {
  uint32_t u = uint32_t{b} << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Random 16-bit floats in [-1, 1) as bytes, and their values.
struct Halves {
  std::vector<uint8_t> bytes;
  std::vector<float> values;
};
inline Halves randomHalves(size_t n, std::mt19937 &rng, bool bf16 = false) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  Halves h{std::vector<uint8_t>(n * 2), std::vector<float>(n)};
  for (size_t i = 0; i < n; ++i) {
    uint16_t u = bf16 ? toBf16(d(rng)) : toHalf(d(rng));
    std::memcpy(&h.bytes[i * 2], &u, 2);
    h.values[i] = bf16 ? fromBf16(u) : fromHalf(u);
  }
  return h;
}
inline std::vector<float> readHalves(const std::vector<uint8_t> &bytes, bool bf16 = false) {
  std::vector<float> v(bytes.size() / 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t u;
    std::memcpy(&u, &bytes[i * 2], 2);
    v[i] = bf16 ? fromBf16(u) : fromHalf(u);
  }
  return v;
}

/// Binds tensors and scalars by parameter name and runs the kernel.
inline void run(const thir::Kernel &k, std::map<std::string, std::vector<uint8_t> *> tensors,
                std::map<std::string, double> scalars, int warpSize = 64,
                const std::function<void(thir::InterpreterLaunch &)> &launch = {}) {
  thir::InterpreterLaunch l;
  l.warpSize = warpSize;
  for (const thir::Param &p : k.params) {
    l.tensors.push_back(tensors.count(p.name) ? tensors.at(p.name) : nullptr);
    l.scalars.push_back(scalars.count(p.name) ? scalars.at(p.name) : 0.0);
  }
  if (launch)
    launch(l);
  auto error = thir::interpret(k, l);
  REQUIRE_MESSAGE(!error, *error);
}

/// ||got - want|| / ||want||.
inline double relError(const std::vector<float> &got, const std::vector<double> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

/// softmax(Q K^T / sqrt(D)) V per (batch, head), causal or not, in float64; layout (B, S, H, D).
inline std::vector<double> attention(const Halves &q, const Halves &k, const Halves &v, int64_t B,
                                     int64_t S, int64_t H, int64_t D, bool causal) {
  std::vector<double> out(B * S * H * D);
  auto at = [&](int64_t b, int64_t s, int64_t h, int64_t d) {
    return ((b * S + s) * H + h) * D + d;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        std::vector<double> p(S, 0.0);
        double mx = -1e300, sum = 0;
        int64_t last = causal ? i : S - 1;
        for (int64_t j = 0; j <= last; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < D; ++d)
            dot += double(q.values[at(b, i, h, d)]) * k.values[at(b, j, h, d)];
          p[j] = dot / std::sqrt(double(D));
          mx = std::max(mx, p[j]);
        }
        for (int64_t j = 0; j <= last; ++j)
          sum += (p[j] = std::exp(p[j] - mx));
        for (int64_t d = 0; d < D; ++d) {
          double o = 0;
          for (int64_t j = 0; j <= last; ++j)
            o += p[j] * v.values[at(b, j, h, d)];
          out[at(b, i, h, d)] = o / sum;
        }
      }
  return out;
}

/// flash_attention.tile for `arch` with `defines` (causal and not) at B=1, H=1, D=128 and
/// sequence length `S`, run with `warpSize`-lane warps, against attention() in float64.
/// `options` and `launch` as compileSample's and run's.
inline void checkAttention(const char *arch, std::map<std::string, std::string> defines, int64_t S,
                           int warpSize, unsigned seed,
                           const std::function<void(driver::DriverOptions &)> &options = {},
                           const std::function<void(thir::InterpreterLaunch &)> &launch = {}) {
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    if (causal)
      defines["causal"] = "True";
    thir::Module m = compileSample("flash_attention.tile", arch, defines, options);
    std::mt19937 rng(seed);
    const int64_t B = 1, H = 1, D = defines.count("D") ? std::stoi(defines.at("D")) : 128;
    const bool bf16 = defines.count("dtype") && defines.at("dtype") == "bfloat16";
    Halves q = randomHalves(B * S * H * D, rng, bf16), k = randomHalves(B * S * H * D, rng, bf16),
           v = randomHalves(B * S * H * D, rng, bf16);
    std::vector<uint8_t> o(B * S * H * D * 2, 0xFF);
    run(m.kernels.at(0), {{"Q", &q.bytes}, {"K", &k.bytes}, {"V", &v.bytes}, {"O", &o}},
        {{"B", B}, {"S", S}, {"H", H}}, warpSize, launch);
    CHECK(relError(readHalves(o, bf16), attention(q, k, v, B, S, H, D, causal)) <
          (bf16 ? 2e-2 : 5e-3));
  }
}

} // namespace tilec::testing
