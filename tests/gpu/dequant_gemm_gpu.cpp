// samples/dequant_gemm_w4a16.tile: C = A dequant(B)^T with int4 weights and per-group float16
// scales, in its decode configuration (block_M=16, mma.sync), its large-M configuration
// (128 x 128, wgmma), through the sm_80 path (embedded PTX), and dequantized into B-operand
// registers (tests/gpu/kernels/w4a16_breg.tile), and the large-M sample whose weights are wgmma's
// A operand in registers (samples/dequant_gemm_w4a16_large.tile), also at decode shapes with the
// weights repacked into words (tests/gpu/kernels/w4a16_words.tile). The reference dequantizes as
// the kernel and PyTorch do (each weight rounded to float16, then a float64 matmul). Fresh random
// inputs each run, a poisoned output with slack behind it, ragged M and N, and a single row; and,
// with one-hot activations, the dequantized weights bit for bit. The words kernel also with its
// k-steps in four accumulator chains (--split-wgmma-chains), and with the scales applied after
// the tensor cores (tests/gpu/kernels/w4a16_words_postscale.tile), as compiled and with its
// groups' waits deferred (--defer-wgmma-waits): its products are not rounded to float16 per
// weight, so it is held to the same tolerance, and with one-hot activations (one product, then
// one rounding to float16) it too is bit-exact. Likewise tests/gpu/kernels/w4a16_words_offset.tile
// (the weights as 1032 + q, and -1032 times each group's activation sums in accumulators of their
// own), as compiled and deferred: its one-hot products are 1032 + q and -1032, exact. And
// tests/gpu/kernels/w4a16_words_ksplit.tile (K split between two warpgroups, the halves summed in
// float32 at the end: a one-hot row has one nonzero product, exact too), and
// tests/gpu/kernels/w4a16_words_tiled.tile (the words kernel reading each block's tile of words
// stored together, padded to whole tiles: ragged N and K pad the last tiles). And
// tests/gpu/kernels/w4a16_words_split.tile (each stage's gemm cut into its four groups, one
// accumulator), as compiled and with its gemms chained in flight (--defer-wgmma-waits): the
// words kernel's products in the words kernel's order, so its output must be the words kernel's
// bit for bit.
#include "dequant_gemm_w4a16_large.h"
#include "gpu_common.h"
#include "offset_defer/w4a16_words_offset.h"
#include "postscale_defer/w4a16_words_postscale.h"
#include "split_defer/w4a16_words_split.h"
#include "w4_large/dequant_gemm_w4a16.h"
#include "w4_sm80/dequant_gemm_w4a16.h"
#include "w4_small/dequant_gemm_w4a16.h"
#include "w4a16_breg.h"
#include "w4a16_words.h"
#include "w4a16_words_ksplit.h"
#include "w4a16_words_offset.h"
#include "w4a16_words_postscale.h"
#include "w4a16_words_split.h"
#include "w4a16_words_tiled.h"
#include "words_chains/w4a16_words.h"

#include <cmath>

using namespace gputest;

namespace {

constexpr int64_t kGroup = 128;

struct Problem {
  int64_t M, N, K;
  std::vector<uint16_t> a;      // M x K float16
  std::vector<uint8_t> packed;  // N x K/2: two int4 per byte, the even k in the low nibble
  std::vector<uint16_t> scales; // K/128 x N float16 (as GPTQ stores them)
};

Problem makeProblem(std::mt19937 &rng, int64_t M, int64_t N, int64_t K) {
  Problem p{M, N, K, randomHalves(M * K, rng), {}, {}};
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.02f, 0.2f);
  p.packed.resize(N * K / 2);
  for (uint8_t &b : p.packed)
    b = static_cast<uint8_t>(byte(rng));
  p.scales.resize(N * (K / kGroup));
  for (uint16_t &s : p.scales)
    s = toHalf(scale(rng));
  return p;
}

/// The float16 weight (n, k): the signed nibble times its group's scale, rounded once.
float weight(const Problem &p, int64_t n, int64_t k) {
  int q = (p.packed[n * (p.K / 2) + k / 2] >> (4 * (k % 2))) & 15;
  q = q >= 8 ? q - 16 : q;
  return fromHalf(toHalf(static_cast<float>(q) * fromHalf(p.scales[(k / kGroup) * p.N + n])));
}

/// `p` with its weights repacked into words (repackInt4IntoWords), as w4a16_words reads them.
Problem repackedIntoWords(const Problem &p) {
  Problem w = p;
  w.packed = repackInt4IntoWords(p.packed, p.N, p.K);
  return w;
}

/// `p` with its words cut into the tiles w4a16_words_tiled reads (repackWordsIntoTiles).
Problem repackedIntoTiles(const Problem &p) {
  Problem w = p;
  w.packed = repackWordsIntoTiles(repackInt4IntoWords(p.packed, p.N, p.K), p.N, p.K);
  return w;
}

/// C (M x N float16, poisoned, slack behind it) after `launch` on `device`'s inputs (the weights
/// as the kernel reads them).
template <class Launch> DeviceBuffer launched(Launch launch, const Problem &device) {
  DeviceBuffer da = upload(device.a), db = upload(device.packed), ds = upload(device.scales);
  DeviceBuffer dc = poisoned(device.M * device.N * 2 + kSlackBytes);
  CK(launch(nullptr, da, db, ds, dc, device.M, device.K, device.N));
  CK(cuCtxSynchronize());
  return dc;
}

/// `config`'s launch on `device` (the weights as the kernel reads them), checked against the
/// reference of `p`.
template <class Launch>
int check(const char *config, Launch launch, const Problem &p, const Problem &device) {
  std::vector<float> w(p.N * p.K);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t k = 0; k < p.K; ++k)
      w[n * p.K + k] = weight(p, n, k);
  std::vector<double> ref(p.M * p.N, 0.0);
  for (int64_t i = 0; i < p.M; ++i)
    for (int64_t n = 0; n < p.N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < p.K; ++k)
        acc += static_cast<double>(fromHalf(p.a[i * p.K + k])) * w[n * p.K + k];
      ref[i * p.N + n] = acc;
    }
  const size_t outBytes = p.M * p.N * 2;
  DeviceBuffer dc = launched(launch, device);
  std::vector<float> got = halvesToFloats(download<uint16_t>(dc, p.M * p.N));
  ErrorStats e = relError(got, ref);
  bool tail = tailIntact(dc, outBytes);
  // float32 accumulation in another order, then one float16 rounding of the output.
  bool ok = e.rel < 2e-3 && e.nan == 0 && tail;
  std::printf("%-7s M=%-5lld N=%-5lld K=%-5lld rel.err %.2e nan %lld%s %s\n", config,
              (long long)p.M, (long long)p.N, (long long)p.K, e.rel, e.nan,
              tail ? "" : " (wrote past the end)", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

template <class Launch> int check(const char *config, Launch launch, const Problem &p) {
  return check(config, launch, p, p);
}

/// `config` with one-hot activations (row m of A selects k = m, M = K): each output is one
/// weight times 1.0 plus zeros, so C^T must be the dequantized weights bit for bit, whatever
/// order the kernel accumulates in. Catches a conversion off by an ulp, which the tolerance of
/// check() lets through.
template <class Launch>
int checkExact(const char *config, Launch launch, const Problem &p, const Problem &device) {
  std::vector<uint16_t> want(p.M * p.N);
  for (int64_t m = 0; m < p.M; ++m)
    for (int64_t n = 0; n < p.N; ++n)
      want[m * p.N + n] = toHalf(weight(p, n, m));
  DeviceBuffer dc = launched(launch, device);
  std::printf("%-7s one-hot M=K=%lld N=%lld: ", config, (long long)p.K, (long long)p.N);
  return compareExact("C", dc, want);
}

/// `config`'s output on `device` bit for bit `want`, the words kernel's (a kernel that computes
/// its products in its order).
template <class Launch>
int checkSameAsWords(const char *config, Launch launch, const std::vector<uint16_t> &want,
                     const Problem &device) {
  DeviceBuffer dc = launched(launch, device);
  std::printf("%-7s as words M=%lld N=%lld K=%lld: ", config, (long long)device.M,
              (long long)device.N, (long long)device.K);
  return compareExact("C", dc, want);
}

Problem oneHotProblem(std::mt19937 &rng, int64_t K, int64_t N) {
  Problem p = makeProblem(rng, K, N, K);
  for (int64_t m = 0; m < K; ++m)
    for (int64_t k = 0; k < K; ++k)
      p.a[m * K + k] = toHalf(k == m ? 1.f : 0.f);
  return p;
}

} // namespace

int main() {
  init();
  CK(tile::w4::small::load());
  CK(tile::w4::large::load());
  CK(tile::w4::sm80::load());
  CK(tile::w4a16_breg::load());
  CK(tile::dequant_gemm_w4a16_large::load());
  CK(tile::w4a16_words::load());
  CK(tile::words_chains::load());
  CK(tile::w4a16_words_postscale::load());
  CK(tile::postscale_defer::load());
  CK(tile::w4a16_words_offset::load());
  CK(tile::offset_defer::load());
  CK(tile::w4a16_words_ksplit::load());
  CK(tile::w4a16_words_tiled::load());
  CK(tile::w4a16_words_split::load());
  CK(tile::split_defer::load());
  std::mt19937 rng = freshRng();
  int failures = 0;
  struct Shape {
    int64_t M, N, K;
  };
  for (Shape s : {Shape{1, 64, 128}, Shape{16, 512, 1024}, Shape{13, 333, 384},
                  Shape{333, 517, 256}, Shape{256, 256, 2048}}) {
    Problem p = makeProblem(rng, s.M, s.N, s.K);
    failures += check("small", &tile::w4::small::w4a16, p);
    failures += check("large", &tile::w4::large::w4a16, p);
    failures += check("sm_80", &tile::w4::sm80::w4a16, p);
    failures += check("breg", &tile::w4a16_breg::w4a16, p);
    failures += check("areg", &tile::dequant_gemm_w4a16_large::w4a16, p);
    failures += check("words", &tile::w4a16_words::w4a16, p, repackedIntoWords(p));
    failures += check("words chains", &tile::words_chains::w4a16, p, repackedIntoWords(p));
    failures += check("postscale", &tile::w4a16_words_postscale::w4a16, p, repackedIntoWords(p));
    failures += check("postscale defer", &tile::postscale_defer::w4a16, p, repackedIntoWords(p));
    failures += check("offset", &tile::w4a16_words_offset::w4a16, p, repackedIntoWords(p));
    failures += check("offset defer", &tile::offset_defer::w4a16, p, repackedIntoWords(p));
    failures += check("ksplit", &tile::w4a16_words_ksplit::w4a16, p, repackedIntoWords(p));
    failures += check("tiled", &tile::w4a16_words_tiled::w4a16, p, repackedIntoTiles(p));
    const Problem words = repackedIntoWords(p);
    failures += check("split", &tile::w4a16_words_split::w4a16, p, words);
    failures += check("split defer", &tile::split_defer::w4a16, p, words);
    const std::vector<uint16_t> wordsOut =
        download<uint16_t>(launched(&tile::w4a16_words::w4a16, words), p.M * p.N);
    failures += checkSameAsWords("split", &tile::w4a16_words_split::w4a16, wordsOut, words);
    failures += checkSameAsWords("split defer", &tile::split_defer::w4a16, wordsOut, words);
  }
  Problem hot = oneHotProblem(rng, 256, 200);
  failures += checkExact("breg", &tile::w4a16_breg::w4a16, hot, hot);
  failures += checkExact("areg", &tile::dequant_gemm_w4a16_large::w4a16, hot, hot);
  failures += checkExact("words", &tile::w4a16_words::w4a16, hot, repackedIntoWords(hot));
  failures += checkExact("words chains", &tile::words_chains::w4a16, hot, repackedIntoWords(hot));
  failures +=
      checkExact("postscale", &tile::w4a16_words_postscale::w4a16, hot, repackedIntoWords(hot));
  failures +=
      checkExact("postscale defer", &tile::postscale_defer::w4a16, hot, repackedIntoWords(hot));
  failures += checkExact("offset", &tile::w4a16_words_offset::w4a16, hot, repackedIntoWords(hot));
  failures += checkExact("offset defer", &tile::offset_defer::w4a16, hot, repackedIntoWords(hot));
  failures += checkExact("ksplit", &tile::w4a16_words_ksplit::w4a16, hot, repackedIntoWords(hot));
  failures += checkExact("tiled", &tile::w4a16_words_tiled::w4a16, hot, repackedIntoTiles(hot));
  failures += checkExact("split", &tile::w4a16_words_split::w4a16, hot, repackedIntoWords(hot));
  failures += checkExact("split defer", &tile::split_defer::w4a16, hot, repackedIntoWords(hot));
  return verdict("dequant_gemm", failures);
}
