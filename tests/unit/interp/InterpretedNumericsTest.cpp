// Numerics of what the compiler hands to code generation, checked on the CPU: programs compiled
// for gfx942 (gemm on MFMA, row reductions across 64-lane wavefronts), where no GPU of this
// project runs them, and for sm_80 (mma.sync and ldmatrix, 32-lane warps), run by the thread IR
// interpreter (threadir/Interpreter.h: warps apart, barriers as the hardware's, MFMA and mma.sync
// by the documented lane layouts) against float64 references on random inputs, at sizes that
// are not multiples of the tiles.
#include "Interpreted.h"

using namespace tilec;
using namespace tilec::testing;

TEST_CASE("gemm_relu for gfx942 (MFMA, A M x K, B K x N) matches a float64 GEMM") {
  // As written, and with block_K = 96: A's 192-byte rows in panels of 64-byte swizzled lines.
  for (bool k96 : {false, true}) {
    CAPTURE(k96);
    std::map<std::string, std::string> defines;
    if (k96)
      defines["block_K"] = "96";
    thir::Module m = compileSample("gemm_relu.tile", "gfx942", defines);
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
  thir::Module m = compileSample("gemm_bias_gelu.tile", "gfx942");
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

TEST_CASE("flash_attention for gfx942 (64 x 64 tiles: row max and sum across wavefront lanes, P "
          "through LDS into MFMA) matches a float64 reference at a ragged length") {
  checkAttention("gfx942", {{"block_M", "64"}, {"block_N", "64"}}, 70, 64, 3);
}

TEST_CASE("softmax for gfx942 (rows reduced across 64-lane wavefronts) matches float64") {
  thir::Module m = compileSample("softmax.tile", "gfx942");
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
  thir::Module m = compileSample("mla_decode_split.tile", "gfx942",
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
  thir::Module m = compileSample("tests/lit/schedule/Inputs/row-sums.tile", "sm_80");
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
