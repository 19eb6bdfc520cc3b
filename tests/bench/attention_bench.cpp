// One attention case of the benchmark (scripts/bench-attention.sh): launches one generated
// flash_attention kernel (Q, K, V, O of shape (B, S, H, D); dims B, S, H) through its header at
// the shape given on the command line, checks it, times it and prints one line
//
//   BENCH case=NAME dtype=fp16 D=128 causal=0 B=.. H=.. S=.. ms=.. tflops=.. ... status=ok
//
// or `status=FAILED reason=...` with exit status 1 when the output is wrong. Built once per case
// (one kernel per process) with -DBENCH_CASE=NAME -DBENCH_HEADER='"stem.h"'
// -DBENCH_NS=tile::bench::NAME and -DBENCH_BF16 for bfloat16; D and causal are the header's
// constants. Inputs: seeded uniform values in [-1, 1); the output is poisoned with NaN before the
// checked launch and must be written in full (and nothing past it); sampled query rows (every row
// of small problems) are compared with a float64 reference. Timing: median of CUDA-event-timed
// launches after an untimed warm-up, no L2 flush, as scripts/bench_attention.py times the peers.
// FLOPs: 4 B H S^2 D, half of it when causal (the convention of FlashAttention's benchmarks).
#include "bench_util.h"
#include "gpu_common.h"
#ifdef BENCH_TRACE
#include "bench_trace.h"
#endif

#include BENCH_HEADER

#include <array>
#include <cstring>
#include <string>

using namespace gputest;

#define BENCH_STR2(x) #x
#define BENCH_STR(x) BENCH_STR2(x)

namespace {

#ifdef BENCH_BF16
constexpr const char *kDtype = "bf16";
constexpr double kUlp = 1.0 / 128;
uint16_t encode(float f) { return toBf16(f); }
float decode(uint16_t b) { return fromBf16(b); }
#else
constexpr const char *kDtype = "fp16";
constexpr double kUlp = 1.0 / 1024;
uint16_t encode(float f) { return toHalf(f); }
float decode(uint16_t b) { return fromHalf(b); }
#endif

constexpr int64_t kD = BENCH_NS::constants::D;
constexpr bool kCausal = BENCH_NS::constants::causal;

struct Options {
  int64_t B = 0, H = 0, S = 0;
  int warmup = 10, reps = 50, batch = 1, samples = 64;
  uint64_t seed = 1;
};

[[noreturn]] void usage(const char *argv0, const std::string &why) {
  std::fprintf(
      stderr,
      "%s: %s\nusage: %s B H S [--warmup W] [--reps R] [--batch N] [--seed S] [--samples N]\n"
      "  one attention case (%s): checks N sampled query rows (default 64; every row\n"
      "  when B*S*H <= 2048) against a float64 reference, then times the median of R\n"
      "  launches after W untimed ones (default 10 and 50); inputs seeded by S\n",
      argv0, why.c_str(), argv0, BENCH_STR(BENCH_CASE));
  std::exit(64);
}

Options parse(int argc, char **argv) {
  benchutil::Options b = benchutil::parseOptions(argc, argv, usage, /*minReps=*/1);
  if (b.positional.size() != 3)
    usage(argv[0], "expected B H S");
  Options o;
  o.B = benchutil::number(argv[0], usage, "B", b.positional[0], 1, 65535);
  o.H = benchutil::number(argv[0], usage, "H", b.positional[1], 1, 65535);
  o.S = benchutil::number(argv[0], usage, "S", b.positional[2], 1, 1 << 20);
  o.warmup = b.warmup;
  o.reps = b.reps;
  o.batch = b.batch;
  o.seed = b.seed;
  if (b.samples)
    o.samples = std::min(b.samples, 1 << 16);
  return o;
}

void printHead(const Options &o) {
  std::printf("BENCH case=%s dtype=%s D=%lld causal=%d B=%lld H=%lld S=%lld", BENCH_STR(BENCH_CASE),
              kDtype, static_cast<long long>(kD), kCausal ? 1 : 0, static_cast<long long>(o.B),
              static_cast<long long>(o.H), static_cast<long long>(o.S));
}

int fail(const Options &o, const std::string &reason) {
  printHead(o);
  std::printf(" status=FAILED reason=%s\n", reason.c_str());
  std::fflush(stdout);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  const Options o = parse(argc, argv);
  init();
  const int64_t B = o.B, H = o.H, S = o.S, D = kD;
  const size_t n = static_cast<size_t>(B * S * H * D);
  auto q = benchutil::randomUniform(n, o.seed, 1, encode),
       k = benchutil::randomUniform(n, o.seed, 2, encode),
       v = benchutil::randomUniform(n, o.seed, 3, encode);
  DeviceBuffer dq = upload(q), dk = upload(k), dv = upload(v), dout = poisoned(n * 2 + kSlackBytes);
  auto launch = [&] { return BENCH_NS::flash_attention(nullptr, dq, dk, dv, dout, B, S, H); };
  CUresult r = launch();
  if (r == CUDA_SUCCESS)
    r = cuCtxSynchronize();
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr;
    cuGetErrorName(r, &name);
    return fail(o, std::string("launch:") + (name ? name : "?"));
  }
  std::vector<uint16_t> out = download<uint16_t>(dout, n);
  long long unwritten = 0;
  for (uint16_t x : out)
    unwritten += std::isnan(decode(x));
  const bool tailOk = tailIntact(dout, n * 2);

  // Sampled query rows: the first and last of the sequence, then seeded random ones.
  auto at = [&](const std::vector<uint16_t> &t, int64_t b, int64_t s, int64_t h, int64_t d) {
    return static_cast<double>(decode(t[((b * S + s) * H + h) * D + d]));
  };
  std::vector<std::array<int64_t, 3>> rows;
  if (B * S * H <= 2048) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t h = 0; h < H; ++h)
          rows.push_back({b, s, h});
  } else {
    rows = {{0, 0, 0}, {B - 1, S - 1, H - 1}};
    std::mt19937_64 rng(o.seed);
    std::uniform_int_distribution<int64_t> rb(0, B - 1), rs(0, S - 1), rh(0, H - 1);
    for (int i = 0; i < o.samples; ++i)
      rows.push_back({rb(rng), rs(rng), rh(rng)});
  }
  double errSq = 0, refSq = 0, maxErr = 0;
  long long bad = 0;
  std::vector<double> p(static_cast<size_t>(S));
  for (const auto &[b, s, h] : rows) {
    const int64_t last = kCausal ? s : S - 1;
    double mx = -1e300, sum = 0;
    for (int64_t j = 0; j <= last; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d)
        dot += at(q, b, s, h, d) * at(k, b, j, h, d);
      p[j] = dot / std::sqrt(static_cast<double>(D));
      mx = std::max(mx, p[j]);
    }
    for (int64_t j = 0; j <= last; ++j)
      sum += (p[j] = std::exp(p[j] - mx));
    for (int64_t d = 0; d < D; ++d) {
      double ref = 0;
      for (int64_t j = 0; j <= last; ++j)
        ref += p[j] * at(v, b, j, h, d);
      ref /= sum;
      const double got = at(out, b, s, h, d), e = std::fabs(got - ref);
      // Two ulps of the output plus P's rounding to the input dtype before P V.
      if (!(e <= 2 * kUlp * std::fabs(ref) + 8 * kUlp / std::sqrt(static_cast<double>(last + 1))))
        ++bad;
      errSq += std::isnan(e) ? 0 : e * e;
      refSq += ref * ref;
      maxErr = std::isnan(e) ? maxErr : std::max(maxErr, e);
    }
  }
  const double relErr = std::sqrt(errSq / std::max(refSq, 1e-300));
  std::string why;
  if (unwritten)
    why += "unwritten=" + std::to_string(unwritten) + ";";
  if (!tailOk)
    why += "wrote_past_end;";
  if (bad)
    why += "bad_entries=" + std::to_string(bad) + "/" + std::to_string(rows.size() * D) + ";";
  if (!(relErr < 4 * kUlp))
    why += "rel_err=" + std::to_string(relErr) + ";";
  if (!why.empty())
    return fail(o, why);

  const double ms = medianMs([&] { CK(launch()); }, o.warmup, o.reps, o.batch);
  const double flop = 4.0 * B * H * S * S * D * (kCausal ? 0.5 : 1.0);
  printHead(o);
  std::printf(" ms=%.4f tflops=%.1f rel_err=%.2e max_err=%.2e checked_rows=%zu warmup=%d "
              "reps=%d batch=%d status=ok\n",
              ms, flop / ms / 1e9, relErr, maxErr, rows.size(), o.warmup, o.reps, o.batch);
#ifdef BENCH_TRACE
  benchtrace::dumpTrace(BENCH_NS::tilec_detail::state().slots[0].module, launch);
#endif
  return 0;
}
