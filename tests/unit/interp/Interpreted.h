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

using Options = std::function<void(driver::DriverOptions &)>;
using Launch = std::function<void(thir::InterpreterLaunch &)>;

/// A defined constant of a sample, or its default.
inline int64_t defined(const std::map<std::string, std::string> &defines, const char *name,
                       int64_t fallback) {
  return defines.count(name) ? std::stoll(defines.at(name)) : fallback;
}

/// gemm_relu.tile (A M x K, B K x N, fp16) at M = 150, N = 130 and `K`: a ragged edge in every
/// dimension.
inline void checkGemmRelu(const char *arch, std::map<std::string, std::string> defines, int64_t K,
                          int warpSize, const Options &options = {}, const Launch &launch = {}) {
  thir::Module m = compileSample("gemm_relu.tile", arch, defines, options);
  std::mt19937 rng(1);
  const int64_t M = 150, N = 130;
  Halves a = randomHalves(M * K, rng), b = randomHalves(K * N, rng);
  std::vector<uint8_t> c(M * N * 2, 0xFF);
  run(m.kernels.at(0), {{"A", &a.bytes}, {"B", &b.bytes}, {"C", &c}},
      {{"M", M}, {"N", N}, {"K", K}}, warpSize, launch);
  std::vector<double> want(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k)
        s += double(a.values[i * K + k]) * b.values[k * N + j];
      want[i * N + j] = std::max(s, 0.0);
    }
  CHECK(relError(readHalves(c), want) < 2e-3);
}

/// gemm_bias_gelu.tile (bf16, B N x K, a bias and GELU in the epilogue) at M = 70, N = 140,
/// K = 48.
inline void checkGemmBiasGelu(const char *arch, int warpSize, const Options &options = {},
                              const Launch &launch = {}) {
  thir::Module m = compileSample("gemm_bias_gelu.tile", arch, {}, options);
  std::mt19937 rng(2);
  const int64_t M = 70, N = 140, K = 48;
  Halves a = randomHalves(M * K, rng, true), b = randomHalves(N * K, rng, true),
         bias = randomHalves(N, rng, true);
  std::vector<uint8_t> c(M * N * 2, 0xFF);
  run(m.kernels.at(0), {{"A", &a.bytes}, {"B", &b.bytes}, {"bias", &bias.bytes}, {"C", &c}},
      {{"M", M}, {"N", N}, {"K", K}}, warpSize, launch);
  std::vector<double> want(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = bias.values[j];
      for (int64_t k = 0; k < K; ++k)
        s += double(a.values[i * K + k]) * b.values[j * K + k];
      want[i * N + j] = 0.5 * s * (1 + std::tanh(0.7978845608028654 * (s + 0.044715 * s * s * s)));
    }
  CHECK(relError(readHalves(c, true), want) < 1e-2);
}

/// Decode attention of MLA in float64: one query per (batch, head) over S keys of `dim` latent
/// plus `pe` rope dimensions, the latent part also the value.
inline std::vector<double> mlaReference(const Halves &q, const Halves &qpe, const Halves &kv,
                                        const Halves &kpe, int64_t batch, int64_t heads,
                                        int64_t dim, int64_t pe, int64_t S) {
  std::vector<double> want(batch * heads * dim);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h) {
      std::vector<double> p(S);
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < dim; ++d)
          dot += double(q.values[(b * heads + h) * dim + d]) * kv.values[(b * S + j) * dim + d];
        for (int64_t d = 0; d < pe; ++d)
          dot += double(qpe.values[(b * heads + h) * pe + d]) * kpe.values[(b * S + j) * pe + d];
        p[j] = dot / std::sqrt(double(dim + pe));
        mx = std::max(mx, p[j]);
      }
      for (int64_t j = 0; j < S; ++j)
        sum += (p[j] = std::exp(p[j] - mx));
      for (int64_t d = 0; d < dim; ++d) {
        double o = 0;
        for (int64_t j = 0; j < S; ++j)
          o += p[j] * kv.values[(b * S + j) * dim + d];
        want[(b * heads + h) * dim + d] = o / sum;
      }
    }
  return want;
}

/// mla_decode_split.tile with `defines` (heads, dim, pe_dim) at batch 2 and 150 keys: its
/// partial kernel (4 splits of 64 keys: the third ragged, the fourth empty), then the combine.
inline void checkMlaDecodeSplit(const char *arch, std::map<std::string, std::string> defines,
                                int warpSize, const Options &options = {},
                                const Launch &launch = {}) {
  thir::Module m = compileSample("mla_decode_split.tile", arch, defines, options);
  std::mt19937 rng(5);
  const int64_t batch = 2, heads = defined(defines, "heads", 128),
                dim = defined(defines, "dim", 512), pe = defined(defines, "pe_dim", 64), splits = 4,
                S = 150;
  Halves q = randomHalves(batch * heads * dim, rng), qpe = randomHalves(batch * heads * pe, rng),
         kv = randomHalves(batch * S * dim, rng), kpe = randomHalves(batch * S * pe, rng);
  std::vector<uint8_t> partial(batch * heads * splits * dim * 4, 0xFF),
      lse(batch * heads * splits * 4, 0xFF), out(batch * heads * dim * 2, 0xFF);
  std::map<std::string, double> dims = {{"batch", batch}, {"seqlen_kv", S}};
  run(m.kernels.at(0),
      {{"Q", &q.bytes},
       {"Q_pe", &qpe.bytes},
       {"KV", &kv.bytes},
       {"K_pe", &kpe.bytes},
       {"O_partial", &partial},
       {"lse", &lse}},
      dims, warpSize, launch);
  run(m.kernels.at(1), {{"O_partial", &partial}, {"lse", &lse}, {"Output", &out}}, dims, warpSize,
      launch);
  CHECK(relError(readHalves(out), mlaReference(q, qpe, kv, kpe, batch, heads, dim, pe, S)) < 5e-3);
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
