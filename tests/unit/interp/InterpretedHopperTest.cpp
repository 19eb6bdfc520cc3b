// sm_90a's warp-specialized pipelines run on the CPU: the programs as `tilec compile` hands them
// to code generation (TMA boxes on mbarrier rings from a producer warp, consumer warpgroups
// issuing wgmma from shared-memory descriptors or with A in registers, persistent blocks walking
// their tiles), in the thread IR interpreter against float64 references at sizes that are not
// multiples of the tiles. Each runs with TMA (as the launch sets it where the tensor maps encode)
// and without (the producer's plain loads), and with the warps running until they wait and
// taking turns after every statement: the protocols must hold under both interleavings.
#include "Interpreted.h"
#include "threadir/InterpreterValue.h"
#include "w4_packing.h"

using namespace tilec;
using namespace tilec::testing;

namespace {

/// The launches a Hopper program runs under: with TMA and without, each under both
/// interleavings (`thorough`), or only TMA with the warps running until they wait and the plain
/// loads with turns after every statement.
void forEachLaunch(
    const std::function<void(const std::function<void(thir::InterpreterLaunch &)> &)> &f,
    bool thorough = true) {
  for (bool tma : {true, false})
    for (bool interleave : {false, true}) {
      if (!thorough && tma == interleave)
        continue;
      CAPTURE(tma);
      CAPTURE(interleave);
      f([=](thir::InterpreterLaunch &l) {
        l.tma = tma;
        l.interleaveStatements = interleave;
      });
    }
}

} // namespace

// One program under one launch for every build; the rest in a suite that Debug builds leave out
// (tests/unit/interp/CMakeLists.txt).
TEST_CASE("flash_attention for sm_90a as written, with TMA, matches float64") {
  checkAttention("sm_90a", {}, 150, 32, 10);
}

TEST_SUITE("sm90a-programs") {

  TEST_CASE("flash_attention for sm_90a as written (fp16, D 128; a producer warp, two consumer "
            "warpgroups) matches float64 at a ragged length") {
    forEachLaunch(
        [](const auto &launch) { checkAttention("sm_90a", {}, 150, 32, 11, {}, launch); });
  }

  TEST_CASE("flash_attention for sm_90a, bf16 at D 64, matches float64") {
    forEachLaunch([](const auto &launch) {
      checkAttention("sm_90a", {{"D", "64"}, {"dtype", "bfloat16"}}, 200, 32, 12, {}, launch);
    });
  }

  TEST_CASE("flash_attention for sm_90a, persistent (blocks walk several tiles; the next tile's "
            "loads ahead of the epilogue), matches float64") {
    forEachLaunch([](const auto &launch) {
      checkAttention(
          "sm_90a", {}, 300, 32, 13, [](driver::DriverOptions &o) { o.persistent = true; }, launch);
    });
  }

  TEST_CASE("persistent causal attention (its tiles' work grows with x) is launched on a block "
            "count coprime with the grid's x extent, and matches float64 so") {
    auto persistent = [](driver::DriverOptions &o) { o.persistent = true; };
    CHECK(!compileSample("flash_attention.tile", "sm_90a", {}, persistent)
               .kernels.at(0)
               .persistentBalanceX);
    CHECK(compileSample("flash_attention.tile", "sm_90a", {{"causal", "True"}}, persistent)
              .kernels.at(0)
              .persistentBalanceX);
    // S 500: 4 row blocks, which share 2 with the 2 resident blocks (2 SMs): one block walks
    // them all (the non-causal run of the same build keeps 2).
    checkAttention("sm_90a", {}, 500, 32, 16, persistent);
  }

  TEST_CASE("flash_attention for sm_90a with the consumer warpgroups' turns (--ping-pong) and "
            "without the overlap of P@V (--no-overlap-gemms) matches float64") {
    forEachLaunch([](const auto &launch) {
      checkAttention(
          "sm_90a", {}, 150, 32, 14, [](driver::DriverOptions &o) { o.pingPong = true; }, launch);
      checkAttention(
          "sm_90a", {}, 150, 32, 15, [](driver::DriverOptions &o) { o.noOverlapGemms = true; },
          launch);
    });
  }

  TEST_CASE(
      "gemm_relu for sm_90a (persistent, TMA ring, two consumer warpgroups) matches float64") {
    forEachLaunch([](const auto &launch) { checkGemmRelu("sm_90a", {}, 200, 32, {}, launch); });
  }

  TEST_CASE("gemm_relu for sm_90a with consumer groups on alternate tiles (--ping-pong-tiles) "
            "matches float64") {
    forEachLaunch([](const auto &launch) {
      checkGemmRelu(
          "sm_90a", {}, 200, 32, [](driver::DriverOptions &o) { o.pingPongTiles = true; }, launch);
    });
  }

  TEST_CASE("gemm_bias_gelu for sm_90a (bf16, B N x K) matches float64") {
    forEachLaunch([](const auto &launch) { checkGemmBiasGelu("sm_90a", 32, {}, launch); });
  }

  TEST_CASE(
      "mla_decode_split for sm_90a as written (576-wide scores, the S exchange through shared "
      "memory) matches float64") {
    forEachLaunch([](const auto &launch) { checkMlaDecodeSplit("sm_90a", {}, 32, {}, launch); });
  }

  TEST_CASE("mla_decode for sm_90a as written matches float64") {
    forEachLaunch([](const auto &launch) {
      thir::Module m = compileSample("mla_decode.tile", "sm_90a");
      std::mt19937 rng(21);
      const int64_t batch = 1, heads = 128, dim = 512, pe = 64, S = 150;
      Halves q = randomHalves(batch * heads * dim, rng),
             qpe = randomHalves(batch * heads * pe, rng), kv = randomHalves(batch * S * dim, rng),
             kpe = randomHalves(batch * S * pe, rng);
      std::vector<uint8_t> out(batch * heads * dim * 2, 0xFF);
      run(m.kernels.at(0),
          {{"Q", &q.bytes},
           {"Q_pe", &qpe.bytes},
           {"KV", &kv.bytes},
           {"K_pe", &kpe.bytes},
           {"Output", &out}},
          {{"batch", batch}, {"seqlen_kv", S}}, 32, launch);
      CHECK(relError(readHalves(out), mlaReference(q, qpe, kv, kpe, batch, heads, dim, pe, S)) <
            5e-3);
    });
  }

  namespace {

  /// How a W4A16 kernel takes its int4 weights: two a byte (N x K/2), in 32-bit words as Marlin
  /// packs them (N x K/8; tests/gpu/kernels/w4a16_words.tile), or those words cut into tiles of 64
  /// rows x 64 words (w4a16_words_tiled.tile).
  enum class Weights { Bytes, Words, Tiles };

  /// `file` with `defines` and `options` at M = 13, N = 333, K = 384 (the GPU test's ragged shape)
  /// against dequantize-then-matmul in float64.
  void checkW4A16(const char *file, std::map<std::string, std::string> defines,
                  const Options &options, Weights weights, const Launch &launch) {
    thir::Module m = compileSample(file, "sm_90a", defines, options);
    std::mt19937 rng(22);
    const int64_t M = 13, N = 333, K = 384, group = 128;
    Halves a = randomHalves(M * K, rng), scales = randomHalves(K / group * N, rng);
    std::vector<uint8_t> bytes(N * K / 2);
    for (uint8_t &x : bytes)
      x = static_cast<uint8_t>(rng());
    auto nibble = [&](int64_t n, int64_t k) {
      return (bytes[n * K / 2 + k / 2] >> (4 * (k % 2))) & 15;
    };
    std::vector<uint8_t> b = bytes;
    if (weights != Weights::Bytes)
      b = repackInt4IntoWords(bytes, N, K);
    if (weights == Weights::Tiles)
      b = repackWordsIntoTiles(b, N, K);
    std::vector<uint8_t> c(M * N * 2, 0xFF);
    run(m.kernels.at(0), {{"A", &a.bytes}, {"B", &b}, {"Scales", &scales.bytes}, {"C", &c}},
        {{"M", M}, {"N", N}, {"K", K}}, 32, launch);
    std::vector<double> want(M * N);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) {
          const int q = nibble(n, k);
          want[i * N + n] += double(a.values[i * K + k]) * (q >= 8 ? q - 16 : q) *
                             double(scales.values[k / group * N + n]);
        }
    CHECK(relError(readHalves(c), want) < 2e-3);
  }

  } // namespace

  TEST_CASE("W4A16 for sm_90a, every kernel of the GPU tests (int4 weights dequantized into shared "
            "memory or into wgmma's A registers; the words kernels' schedules) matches a "
            "dequantize-then-matmul reference") {
    const Options none, chains = [](driver::DriverOptions &o) { o.splitWgmmaChains = true; },
                        defer = [](driver::DriverOptions &o) { o.deferWgmmaWaits = true; };
    struct Case {
      const char *name, *file;
      std::map<std::string, std::string> defines;
      Options options;
      Weights weights;
    };
    const Case cases[] = {
        {"sample", "dequant_gemm_w4a16.tile", {}, none, Weights::Bytes},
        {"areg", "dequant_gemm_w4a16_large.tile", {}, none, Weights::Bytes},
        {"areg decode",
         "dequant_gemm_w4a16_large.tile",
         {{"block_M", "16"}, {"block_N", "64"}, {"threads", "128"}, {"block_K", "128"}},
         none,
         Weights::Bytes},
        {"breg", "tests/gpu/kernels/w4a16_breg.tile", {}, none, Weights::Bytes},
        {"words", "tests/gpu/kernels/w4a16_words.tile", {}, none, Weights::Words},
        {"words chains", "tests/gpu/kernels/w4a16_words.tile", {}, chains, Weights::Words},
        {"postscale defer",
         "tests/gpu/kernels/w4a16_words_postscale.tile",
         {},
         defer,
         Weights::Words},
        {"offset defer", "tests/gpu/kernels/w4a16_words_offset.tile", {}, defer, Weights::Words},
        {"split defer", "tests/gpu/kernels/w4a16_words_split.tile", {}, defer, Weights::Words},
        {"ksplit", "tests/gpu/kernels/w4a16_words_ksplit.tile", {}, none, Weights::Words},
        {"tiled", "tests/gpu/kernels/w4a16_words_tiled.tile", {}, none, Weights::Tiles},
    };
    for (const Case &c : cases) {
      CAPTURE(c.name);
      forEachLaunch(
          [&](const auto &launch) { checkW4A16(c.file, c.defines, c.options, c.weights, launch); },
          /*thorough=*/&c == &cases[0]);
    }
  }

  TEST_CASE("a persistent GEMM whose producer loads each tile's prologue during the epilogue of "
            "the tile before (tests/lit/codegen/Inputs/shared-reuse.tile) matches float64") {
    forEachLaunch([](const auto &launch) {
      thir::Module m = compileSample("tests/lit/codegen/Inputs/shared-reuse.tile", "sm_90a");
      std::mt19937 rng(23);
      const int64_t M = 150, N = 130, K = 200;
      Halves a = randomHalves(M * K, rng), b = randomHalves(K * N, rng),
             x = randomHalves(M * 64, rng);
      std::vector<uint8_t> c(M * N * 2, 0xFF);
      run(m.kernels.at(0), {{"A", &a.bytes}, {"B", &b.bytes}, {"X", &x.bytes}, {"C", &c}},
          {{"M", M}, {"N", N}, {"K", K}}, 32, launch);
      std::vector<double> want(M * N);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j)
          for (int64_t k = 0; k < K; ++k)
            want[i * N + j] += double(a.values[i * K + k]) * b.values[k * N + j];
      CHECK(relError(readHalves(c), want) < 2e-3);
    });
  }

  TEST_CASE("float8 GEMMs for sm_90a (tests/gpu/kernels/gemm_fp8.tile: e4m3, e5m2 and mixed "
            "operands, 32-, 64- and 128-byte swizzled rows) match float64") {
    thir::Module m = compileSample("tests/gpu/kernels/gemm_fp8.tile", "sm_90a");
    std::mt19937 rng(24);
    // Codes of values in [-2, 2]: no NaN, no infinity, no float16 overflow in the scaled kernel.
    auto randomFp8 = [&](int64_t n, DType t) {
      std::vector<uint8_t> codes(static_cast<size_t>(n));
      for (uint8_t &c : codes)
        do
          c = static_cast<uint8_t>(rng());
        while (!(std::fabs(thir::interp::toDouble(c, t)) <= 2.0));
      return codes;
    };
    const int64_t M = 200, N = 130, K = 96;
    for (const thir::Kernel &k : m.kernels) {
      CAPTURE(k.name);
      const DType at = k.params[0].dtype, bt = k.params[1].dtype;
      const bool half = k.params[2].dtype == DType::Float16;
      forEachLaunch(
          [&](const auto &launch) {
            std::vector<uint8_t> a = randomFp8(M * K, at), b = randomFp8(N * K, bt);
            std::vector<uint8_t> c(M * N * (half ? 2 : 4), 0xFF);
            run(k, {{"A", &a}, {"B", &b}, {"C", &c}},
                {{"M", M}, {"N", N}, {"K", K}, {"scale", 0.25}}, 32, launch);
            std::vector<double> want(M * N);
            for (int64_t i = 0; i < M; ++i)
              for (int64_t j = 0; j < N; ++j) {
                for (int64_t kk = 0; kk < K; ++kk)
                  want[i * N + j] += thir::interp::toDouble(a[i * K + kk], at) *
                                     thir::interp::toDouble(b[j * K + kk], bt);
                if (half)
                  want[i * N + j] *= 0.25;
              }
            std::vector<float> got(M * N);
            if (half)
              got = readHalves(c);
            else
              std::memcpy(got.data(), c.data(), c.size());
            CHECK(relError(got, want) < (half ? 2e-3 : 1e-5));
          },
          /*thorough=*/false);
    }
  }

  TEST_CASE(
      "the GEMM operand layouts of the GPU tests (tests/gpu/kernels/gemm_variants.tile: A and "
      "B stored transposed or not, 128-, 64- and 32-byte swizzled rows, warpgroups split "
      "along M or N, B in registers) match float64 for sm_90a and sm_80") {
    for (const char *arch : {"sm_90a", "sm_80"}) {
      CAPTURE(arch);
      thir::Module m = compileSample("tests/gpu/kernels/gemm_variants.tile", arch);
      std::mt19937 rng(25);
      const int64_t M = 150, N = 130, K = 200;
      for (const thir::Kernel &k : m.kernels) {
        CAPTURE(k.name);
        // nt: A M x K, B N x K; nn: B K x N; tn: A K x M.
        const bool aT = k.name.rfind("tn", 0) == 0, bKN = k.name.rfind("nn", 0) == 0;
        forEachLaunch(
            [&](const auto &launch) {
              Halves a = randomHalves(M * K, rng), b = randomHalves(K * N, rng);
              std::vector<uint8_t> c(M * N * 4, 0xFF);
              run(k, {{"A", &a.bytes}, {"B", &b.bytes}, {"C", &c}}, {{"M", M}, {"N", N}, {"K", K}},
                  32, launch);
              std::vector<double> want(M * N);
              for (int64_t i = 0; i < M; ++i)
                for (int64_t j = 0; j < N; ++j)
                  for (int64_t kk = 0; kk < K; ++kk)
                    want[i * N + j] += double(a.values[aT ? kk * M + i : i * K + kk]) *
                                       b.values[bKN ? kk * N + j : j * K + kk];
              std::vector<float> got(M * N);
              std::memcpy(got.data(), c.data(), c.size());
              CHECK(relError(got, want) < 1e-5);
            },
            /*thorough=*/false);
      }
    }
  }

  TEST_CASE("mla_decode_split for sm_90a, persistent (each tile's Q loaded by the producer during "
            "the epilogue of the tile before; a split without keys among the tiles) matches "
            "float64") {
    forEachLaunch([](const auto &launch) {
      checkMlaDecodeSplit(
          "sm_90a", {}, 32, [](driver::DriverOptions &o) { o.persistent = true; }, launch);
    });
  }

} // TEST_SUITE("sm90a-programs")
