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
  checkGemmRelu("gfx942", {}, 72, 64);
  checkGemmRelu("gfx942", {{"block_K", "96"}}, 200, 64);
}

TEST_CASE("gemm_bias_gelu for gfx942 (bf16 MFMA, B N x K) matches a float64 reference") {
  checkGemmBiasGelu("gfx942", 64);
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
  checkMlaDecodeSplit("gfx942", {{"dim", "128"}, {"pe_dim", "32"}, {"heads", "64"}}, 64);
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
