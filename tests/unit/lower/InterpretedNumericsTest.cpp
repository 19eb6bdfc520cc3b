// Numerics of what lowering produces, checked on the CPU: programs compiled for gfx942 (gemm on
// MFMA, row reductions across 64-lane wavefronts), where no GPU of this project runs them, and
// for sm_80 without cp.async pipelines (mma.sync and ldmatrix, 32-lane warps), run by the thread
// IR interpreter (threadir/Interpreter.h: lockstep threads, MFMA and mma.sync by the documented
// lane layouts) against float64 references on random inputs, at sizes that are not multiples of
// the tiles.
#include "lower/Lower.h"
#include "sema/Sema.h"
#include "syntax/Parser.h"
#include "threadir/Interpreter.h"

#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>

using namespace tilec;

namespace {

/// `name` under samples/, or a path from the source root.
std::string readSample(const std::string &name) {
  std::string path = name.find('/') == std::string::npos ? "samples/" + name : name;
  std::ifstream in(std::string(TILEC_SOURCE_ROOT) + "/" + path);
  REQUIRE_MESSAGE(in, "cannot read " << path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The thread IR of `file` (a sample) for `arch`, after -D `defines`.
thir::Module lowerSample(const std::string &file, const char *arch,
                         std::map<std::string, std::string> defines = {}) {
  SourceManager sm;
  DiagnosticEngine diags(sm);
  uint32_t id = sm.addBuffer(file, readSample(file));
  auto module = parseModule(sm, id, diags);
  REQUIRE_MESSAGE(module, diags.renderAll());
  sema::Options so;
  so.stem = "test";
  so.defines = std::move(defines);
  so.moduleSearchPath = {std::string(TILEC_SOURCE_ROOT) + "/stdlib"};
  auto program = sema::analyze(*module, sm, diags, so);
  REQUIRE_MESSAGE(program, diags.renderAll());
  lower::Options lo;
  lo.target = *target::targetInfo(arch);
  auto lowered = lower::lowerProgram(*program, diags, lo);
  REQUIRE_MESSAGE(lowered, diags.renderAll());
  return std::move(lowered->module);
}

uint16_t toHalf(float f) {
  auto h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}
float fromHalf(uint16_t u) {
  _Float16 h;
  std::memcpy(&h, &u, 2);
  return static_cast<float>(h);
}
uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}
float fromBf16(uint16_t b) {
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
Halves randomHalves(size_t n, std::mt19937 &rng, bool bf16 = false) {
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  Halves h{std::vector<uint8_t>(n * 2), std::vector<float>(n)};
  for (size_t i = 0; i < n; ++i) {
    uint16_t u = bf16 ? toBf16(d(rng)) : toHalf(d(rng));
    std::memcpy(&h.bytes[i * 2], &u, 2);
    h.values[i] = bf16 ? fromBf16(u) : fromHalf(u);
  }
  return h;
}
std::vector<float> readHalves(const std::vector<uint8_t> &bytes, bool bf16 = false) {
  std::vector<float> v(bytes.size() / 2);
  for (size_t i = 0; i < v.size(); ++i) {
    uint16_t u;
    std::memcpy(&u, &bytes[i * 2], 2);
    v[i] = bf16 ? fromBf16(u) : fromHalf(u);
  }
  return v;
}

/// Binds tensors and scalars by parameter name and runs the kernel.
void run(const thir::Kernel &k, std::map<std::string, std::vector<uint8_t> *> tensors,
         std::map<std::string, double> scalars, int warpSize = 64) {
  thir::InterpreterLaunch l;
  l.warpSize = warpSize;
  for (const thir::Param &p : k.params) {
    l.tensors.push_back(tensors.count(p.name) ? tensors.at(p.name) : nullptr);
    l.scalars.push_back(scalars.count(p.name) ? scalars.at(p.name) : 0.0);
  }
  auto error = thir::interpret(k, l);
  REQUIRE_MESSAGE(!error, *error);
}

/// ||got - want|| / ||want||.
double relError(const std::vector<float> &got, const std::vector<double> &want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / den);
}

} // namespace

TEST_CASE("gemm_relu for gfx942 (MFMA, A M x K, B K x N) matches a float64 GEMM") {
  // As written, and with block_K = 96: A's 192-byte rows in panels of 64-byte swizzled lines.
  for (bool k96 : {false, true}) {
    CAPTURE(k96);
    std::map<std::string, std::string> defines;
    if (k96)
      defines["block_K"] = "96";
    thir::Module m = lowerSample("gemm_relu.tile", "gfx942", defines);
    std::mt19937 rng(1);
    // Not multiples of the 128 x 128 x 64 (96) tile: a ragged edge in every dimension.
    const int64_t M = 150, N = 130, K = k96 ? 200 : 72;
    Halves a = randomHalves(M * K, rng), b = randomHalves(K * N, rng);
    std::vector<uint8_t> c(M * N * 2, 0xFF);
    run(m.kernels.at(0), {{"A", &a.bytes}, {"B", &b.bytes}, {"C", &c}},
        {{"M", M}, {"N", N}, {"K", K}});
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
}

TEST_CASE("gemm_bias_gelu for gfx942 (bf16 MFMA, B N x K) matches a float64 reference") {
  thir::Module m = lowerSample("gemm_bias_gelu.tile", "gfx942");
  std::mt19937 rng(2);
  const int64_t M = 70, N = 140, K = 48;
  Halves a = randomHalves(M * K, rng, true), b = randomHalves(N * K, rng, true),
         bias = randomHalves(N, rng, true);
  std::vector<uint8_t> c(M * N * 2, 0xFF);
  run(m.kernels.at(0), {{"A", &a.bytes}, {"B", &b.bytes}, {"bias", &bias.bytes}, {"C", &c}},
      {{"M", M}, {"N", N}, {"K", K}});
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

namespace {

/// softmax(Q K^T / sqrt(D)) V per (batch, head), causal or not, in float64; layout (B, S, H, D).
std::vector<double> attention(const Halves &q, const Halves &k, const Halves &v, int64_t B,
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
void checkAttention(const char *arch, std::map<std::string, std::string> defines, int64_t S,
                    int warpSize, unsigned seed) {
  for (bool causal : {false, true}) {
    CAPTURE(causal);
    if (causal)
      defines["causal"] = "True";
    thir::Module m = lowerSample("flash_attention.tile", arch, defines);
    std::mt19937 rng(seed);
    const int64_t B = 1, H = 1, D = 128;
    Halves q = randomHalves(B * S * H * D, rng), k = randomHalves(B * S * H * D, rng),
           v = randomHalves(B * S * H * D, rng);
    std::vector<uint8_t> o(B * S * H * D * 2, 0xFF);
    run(m.kernels.at(0), {{"Q", &q.bytes}, {"K", &k.bytes}, {"V", &v.bytes}, {"O", &o}},
        {{"B", B}, {"S", S}, {"H", H}}, warpSize);
    CHECK(relError(readHalves(o), attention(q, k, v, B, S, H, D, causal)) < 5e-3);
  }
}

} // namespace

TEST_CASE("flash_attention for gfx942 (64 x 64 tiles: row max and sum across wavefront lanes, P "
          "through LDS into MFMA) matches a float64 reference at a ragged length") {
  checkAttention("gfx942", {{"block_M", "64"}, {"block_N", "64"}}, 70, 64, 3);
}

TEST_CASE("softmax for gfx942 (rows reduced across 64-lane wavefronts) matches float64") {
  thir::Module m = lowerSample("softmax.tile", "gfx942");
  std::mt19937 rng(4);
  const int64_t M = 7, N = 1024;
  Halves x = randomHalves(M * N, rng);
  std::vector<uint8_t> y(M * N * 2, 0xFF);
  run(m.kernels.at(0), {{"X", &x.bytes}, {"Y", &y}}, {{"M", M}});
  std::vector<double> want(M * N);
  for (int64_t r = 0; r < M; ++r) {
    double mx = -1e300, sum = 0;
    for (int64_t c = 0; c < N; ++c)
      mx = std::max(mx, double(x.values[r * N + c]));
    for (int64_t c = 0; c < N; ++c)
      sum += std::exp(x.values[r * N + c] - mx);
    for (int64_t c = 0; c < N; ++c)
      want[r * N + c] = std::exp(x.values[r * N + c] - mx) / sum;
  }
  CHECK(relError(readHalves(y), want) < 2e-3);
}

TEST_CASE("mla_decode_split for gfx942 (rows across 4 wavefronts, row sums summed after the loop) "
          "matches a float64 reference") {
  // Narrowed to fit the 64 KiB of LDS: 64 heads of 128 + 32 dimensions. FullCol spreads each row
  // of the scores over the 4 wavefronts, so the row sums that defer-row-sums accumulates per
  // thread are summed across wavefronts through LDS after the loop.
  thir::Module m = lowerSample("mla_decode_split.tile", "gfx942",
                               {{"dim", "128"}, {"pe_dim", "32"}, {"heads", "64"}});
  std::mt19937 rng(5);
  // 4 splits of 64 keys: the third ragged, the fourth empty.
  const int64_t batch = 2, heads = 64, dim = 128, pe = 32, splits = 4, S = 150;
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
      dims);
  run(m.kernels.at(1), {{"O_partial", &partial}, {"lse", &lse}, {"Output", &out}}, dims);
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
  CHECK(relError(readHalves(out), want) < 5e-3);
}

TEST_CASE("flash_attention for sm_80 without a pipeline (mma.sync, ldmatrix, row sums summed "
          "after the loop) matches a float64 reference at a ragged length") {
  checkAttention("sm_80", {{"num_stages", "1"}}, 150, 32, 6);
}

TEST_CASE("row sums accumulated over a loop, rows across four warps (sm_80, mma.sync), match "
          "float64 with and without defer-row-sums") {
  // tests/lit/schedule/Inputs/row-sums.tile: L = l after l = l / 2 + rowsum(A_k B) per block
  // of K; `deferred` sums each row's copies after the loop, `starts_at_one` in every iteration.
  thir::Module m = lowerSample("tests/lit/schedule/Inputs/row-sums.tile", "sm_80");
  const int64_t M = 100, K = 80, N = 64, bk = 32;
  std::mt19937 rng(7);
  Halves a = randomHalves(M * K, rng), b = randomHalves(K * N, rng);
  for (const char *name : {"deferred", "starts_at_one"}) {
    CAPTURE(name);
    const thir::Kernel *kernel = nullptr;
    for (const thir::Kernel &k : m.kernels)
      if (k.name == name)
        kernel = &k;
    REQUIRE(kernel);
    std::vector<uint8_t> l(M * 4, 0xFF);
    run(*kernel, {{"A", &a.bytes}, {"B", &b.bytes}, {"L", &l}}, {{"M", M}, {"K", K}}, 32);
    std::vector<double> want(M);
    std::vector<float> got(M);
    for (int64_t i = 0; i < M; ++i) {
      double acc = std::string(name) == "deferred" ? 0 : 1;
      for (int64_t k0 = 0; k0 < K; k0 += bk) {
        double rs = 0;
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = k0; k < std::min(K, k0 + bk); ++k)
            rs += double(a.values[i * K + k]) * b.values[k * N + j];
        acc = acc * 0.5 + rs;
      }
      want[i] = acc;
      std::memcpy(&got[i], &l[i * 4], 4);
    }
    CHECK(relError(got, want) < 1e-5);
  }
}
