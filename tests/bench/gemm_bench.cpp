// One GEMM case of the benchmark (scripts/bench-gemm.sh): launches one generated kernel through
// its header at the shape given on the command line, checks it, times it and prints one line
//
//   BENCH case=NAME kind=KIND dtype=fp16 layout=nn M=.. N=.. K=.. ms=.. tflops=.. ... status=ok
//
// or `status=FAILED reason=...` with exit status 1 when the output is wrong. Built once per case
// (one kernel per process: two headers of one stem must not share a process) with
//   -DBENCH_CASE=NAME -DBENCH_HEADER='"stem.h"' -DBENCH_LAUNCH=tile::bench::NAME::fn
//   -DBENCH_KIND_<KIND>
// (and -DBENCH_TRACE -DBENCH_NS=tile::bench::NAME for scripts/trace-timeline.sh build-gemm).
// Inputs: seeded uniform values in [-1, 1) in the kernel's dtype; the output is poisoned with NaN
// before the checked launch and must be written in full (and nothing past it); sampled entries
// (every entry of small problems) are compared with a CPU reference in double. Timing: median of
// CUDA-event-timed launches after an untimed warm-up (gputest::medianMs), with no L2 flush between
// launches, exactly as scripts/bench_gemm.py times the peers.
#include "bench_util.h"
#include "gpu_common.h"
#ifdef BENCH_TRACE
#include "bench_trace.h"
#endif

#include BENCH_HEADER

#include <cerrno>
#include <string>

using namespace gputest;

#define BENCH_STR2(x) #x
#define BENCH_STR(x) BENCH_STR2(x)

namespace {

// ---- element types -------------------------------------------------------------------------

struct F16 {
  using Bits = uint16_t;
  static constexpr const char *name = "fp16";
  static constexpr double rtol = 1.0 / 1024; // two ulps of the fp16 output
  static Bits encode(float f) { return toHalf(f); }
  static float decode(Bits b) { return fromHalf(b); }
};

struct BF16 {
  using Bits = uint16_t;
  static constexpr const char *name = "bf16";
  static constexpr double rtol = 1.0 / 128; // two ulps of the bf16 output
  static Bits encode(float f) { return toBf16(f); }
  static float decode(Bits b) { return fromBf16(b); }
};

/// OCP float8 e4m3 (the "fn" variant: bias 7, no infinities, 0x7f/0xff NaN, largest 448).
struct F8E4M3 {
  using Bits = uint8_t;
  static constexpr const char *name = "fp8e4m3";
  static float decode(Bits b) {
    int e = (b >> 3) & 15, m = b & 7;
    float mag = e == 15 && m == 7 ? NAN
                : e == 0          ? std::ldexp(static_cast<float>(m), -9)
                                  : std::ldexp(1.0f + m / 8.0f, e - 7);
    return b & 0x80 ? -mag : mag;
  }
  /// Round to nearest, ties to the even code, saturating at 448.
  static Bits encode(float f) {
    static const std::vector<float> table = [] {
      std::vector<float> t(127); // codes 0..126: the finite non-negative values, increasing
      for (int c = 0; c < 127; ++c)
        t[c] = decode(static_cast<Bits>(c));
      return t;
    }();
    Bits sign = std::signbit(f) ? 0x80 : 0;
    float a = std::min(std::fabs(f), table.back());
    int hi = static_cast<int>(std::lower_bound(table.begin(), table.end(), a) - table.begin());
    int code = hi;
    if (hi > 0) {
      float dLo = a - table[hi - 1], dHi = table[hi] - a;
      code = dLo < dHi || (dLo == dHi && (hi - 1) % 2 == 0) ? hi - 1 : hi;
    }
    return static_cast<Bits>(sign | code);
  }
};

// ---- the kinds of kernel (tests/bench/gemm-cases.txt names them) ------------------------------

enum class Epilogue { None, Relu, BiasGelu, Scale };

/// Device operands of one problem; `bias` and `alpha` only where the kind has them.
struct Operands {
  CUdeviceptr a = 0, b = 0, bias = 0, c = 0, scales = 0;
  float alpha = 1;
};

struct Shape {
  int64_t M, N, K;
};

/// A kind's element types, storage order (`layout`: A then B, 'n' stored as used, 't' stored
/// transposed: A (K, M), B (N, K)) and epilogue.
template <class InT, class OutT, char A, char B, Epilogue E> struct KindInfo {
  using In = InT;
  using Out = OutT;
  static constexpr char layout[3] = {A, B, 0};
  static constexpr bool aKM = A == 't', bNK = B == 't';
  static constexpr Epilogue epilogue = E;
};

#if defined(BENCH_KIND_relu) // C = relu(A B)
using Kind = KindInfo<F16, F16, 'n', 'n', Epilogue::Relu>;
constexpr const char *kKind = "relu";
#elif defined(BENCH_KIND_bias_gelu) // C = gelu_tanh(A B^T + bias), bias (N)
using Kind = KindInfo<BF16, BF16, 'n', 't', Epilogue::BiasGelu>;
constexpr const char *kKind = "bias_gelu";
#elif defined(BENCH_KIND_tn_scale)  // C = alpha A^T B
using Kind = KindInfo<F16, F16, 't', 'n', Epilogue::Scale>;
constexpr const char *kKind = "tn_scale";
#elif defined(BENCH_KIND_nt)        // C = A B^T
using Kind = KindInfo<F16, F16, 'n', 't', Epilogue::None>;
constexpr const char *kKind = "nt";
#elif defined(BENCH_KIND_w4a16)     // C = A dequant(B)^T: B int4 (N, K/2 bytes), scales (N, K/128)
using Kind = KindInfo<F16, F16, 'n', 't', Epilogue::None>;
constexpr const char *kKind = "w4a16";
#elif defined(BENCH_KIND_w4a16_splitk) // the same, by a kernel that adds into C (split K)
using Kind = KindInfo<F16, F16, 'n', 't', Epilogue::None>;
constexpr const char *kKind = "w4a16_splitk";
// w4a16_words: the same weights packed into words as Marlin packs them (w4DeviceWeights).
#elif defined(BENCH_KIND_w4a16_words)
using Kind = KindInfo<F16, F16, 'n', 't', Epilogue::None>;
constexpr const char *kKind = "w4a16_words";
// w4a16_tiled: those words cut into tiles of 64 rows x 64 words, each tile's words together
// (tests/gpu/kernels/w4a16_words_tiled.tile).
#elif defined(BENCH_KIND_w4a16_tiled)
using Kind = KindInfo<F16, F16, 'n', 't', Epilogue::None>;
constexpr const char *kKind = "w4a16_tiled";
#elif defined(BENCH_KIND_fp8_nt) // C = A B^T, float8 e4m3 in, bfloat16 out
using Kind = KindInfo<F8E4M3, BF16, 'n', 't', Epilogue::None>;
constexpr const char *kKind = "fp8_nt";
#else
#error "define one BENCH_KIND_<kind> (see tests/bench/gemm-cases.txt)"
#endif
#if defined(BENCH_KIND_w4a16) || defined(BENCH_KIND_w4a16_splitk) ||                               \
    defined(BENCH_KIND_w4a16_words) || defined(BENCH_KIND_w4a16_tiled)
constexpr bool kW4A16 = true;
#else
constexpr bool kW4A16 = false;
#endif
/// W4A16: the weights' quantization group along K (samples/dequant_gemm_w4a16.tile's `group`).
constexpr int64_t kGroup = 128;
using In = Kind::In;
using Out = Kind::Out;
constexpr const char *kLayout = Kind::layout;
constexpr bool kAKM = Kind::aKM, kBNK = Kind::bNK;
constexpr Epilogue kEpilogue = Kind::epilogue;

/// The launch, in the kernel's parameter order: tensors and scalars as declared, then the
/// symbolic dimensions in order of first appearance.
CUresult launch(const Operands &o, const Shape &s) {
#if defined(BENCH_KIND_bias_gelu)
  return BENCH_LAUNCH(nullptr, o.a, o.b, o.bias, o.c, s.M, s.K, s.N);
#elif defined(BENCH_KIND_tn_scale)
  return BENCH_LAUNCH(nullptr, o.a, o.b, o.c, o.alpha, s.K, s.M, s.N);
#elif defined(BENCH_KIND_w4a16) || defined(BENCH_KIND_w4a16_words) ||                              \
    defined(BENCH_KIND_w4a16_tiled)
  return BENCH_LAUNCH(nullptr, o.a, o.b, o.scales, o.c, s.M, s.K, s.N);
#elif defined(BENCH_KIND_w4a16_splitk)
  // The kernel adds its partial products into C: zeroing C is part of every timed launch.
  if (CUresult r = cuMemsetD16Async(o.c, 0, static_cast<size_t>(s.M * s.N), nullptr);
      r != CUDA_SUCCESS)
    return r;
  return BENCH_LAUNCH(nullptr, o.a, o.b, o.scales, o.c, s.M, s.K, s.N);
#else
  return BENCH_LAUNCH(nullptr, o.a, o.b, o.c, s.M, s.K, s.N);
#endif
}

// ---- inputs and reference ----------------------------------------------------------------------

template <class T>
std::vector<typename T::Bits> randomUniform(size_t n, uint64_t seed, uint64_t stream) {
  return benchutil::randomUniform(n, seed, stream, T::encode);
}

double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

struct Host {
  std::vector<In::Bits> a, b;
  std::vector<Out::Bits> bias;
  float alpha = 0.5f;
  std::vector<uint8_t> packed;  // w4a16: N x K/2, two int4 per byte, the even k in the low nibble
  std::vector<uint16_t> scales; // w4a16: K/kGroup x N float16
};

/// W4A16's weight (n, k) as the kernel and a dequantize-then-matmul reference compute it: the
/// signed nibble times its group's scale, rounded to float16.
float w4Weight(const Host &h, const Shape &s, int64_t n, int64_t k) {
  int q = (h.packed[n * (s.K / 2) + k / 2] >> (4 * (k % 2))) & 15;
  q = q >= 8 ? q - 16 : q;
  return fromHalf(toHalf(static_cast<float>(q) * fromHalf(h.scales[(k / kGroup) * s.N + n])));
}

/// The weights as the kernel reads them: the bytes themselves, or for w4a16_words the same int4
/// values repacked into 32-bit words (gputest::repackInt4IntoWords), for w4a16_tiled those words
/// cut into tiles (gputest::repackWordsIntoTiles).
std::vector<uint8_t> w4DeviceWeights(const Host &h, const Shape &s) {
#if defined(BENCH_KIND_w4a16_words)
  return repackInt4IntoWords(h.packed, s.N, s.K);
#elif defined(BENCH_KIND_w4a16_tiled)
  return repackWordsIntoTiles(repackInt4IntoWords(h.packed, s.N, s.K), s.N, s.K);
#else
  (void)s;
  return h.packed;
#endif
}

double reference(const Host &h, const Shape &s, int64_t i, int64_t j) {
  double acc = 0;
  for (int64_t k = 0; k < s.K; ++k) {
    float a = In::decode(h.a[kAKM ? k * s.M + i : i * s.K + k]);
    float b = kW4A16 ? w4Weight(h, s, j, k) : In::decode(h.b[kBNK ? j * s.K + k : k * s.N + j]);
    acc += static_cast<double>(a) * b;
  }
  switch (kEpilogue) {
  case Epilogue::None:
    return acc;
  case Epilogue::Relu:
    return std::max(acc, 0.0);
  case Epilogue::BiasGelu:
    return geluTanh(acc + Out::decode(h.bias[j]));
  case Epilogue::Scale:
    return acc * h.alpha;
  }
  return acc;
}

struct Options {
  Shape shape{0, 0, 0};
  int warmup = 10, reps = 50, batch = 1, samples = 2048;
  uint64_t seed = 1;
};

[[noreturn]] void usage(const char *argv0, const std::string &why) {
  std::fprintf(
      stderr,
      "%s: %s\n"
      "usage: %s M N K [--warmup W] [--reps R] [--batch N] [--seed S] [--samples N]\n"
      "       %s --describe\n"
      "  one GEMM case (%s, kind %s): checks W >= 0 untimed launches, times the median of\n"
      "  R >= 20 (default 10 and 50), compares N sampled outputs (default 2048; every\n"
      "  output when M*N*K <= 2^28) with a CPU reference; inputs seeded by S (default 1)\n",
      argv0, why.c_str(), argv0, argv0, BENCH_STR(BENCH_CASE), kKind);
  std::exit(64);
}

Options parse(int argc, char **argv) {
  benchutil::Options b = benchutil::parseOptions(argc, argv, usage);
  if (b.positional.size() != 3)
    usage(argv[0], "expected three dimensions M N K");
  const long long kMaxDim = 1 << 17;
  auto dim = [&](const char *what, const char *text) {
    return benchutil::number(argv[0], usage, what, text, 1, kMaxDim);
  };
  Options o;
  o.shape = {dim("M", b.positional[0]), dim("N", b.positional[1]), dim("K", b.positional[2])};
  if (kW4A16 && o.shape.K % kGroup != 0)
    usage(argv[0], "w4a16 needs K to be a multiple of 128");
  o.warmup = b.warmup;
  o.reps = b.reps;
  o.batch = b.batch;
  if (b.samples)
    o.samples = b.samples;
  o.seed = b.seed;
  return o;
}

void printHead(const Shape &s) {
  std::printf("BENCH case=%s kind=%s dtype=%s layout=%s M=%lld N=%lld K=%lld",
              BENCH_STR(BENCH_CASE), kKind, In::name, kLayout, static_cast<long long>(s.M),
              static_cast<long long>(s.N), static_cast<long long>(s.K));
}

int fail(const Shape &s, const std::string &reason) {
  printHead(s);
  std::printf(" status=FAILED reason=%s\n", reason.c_str());
  std::fflush(stdout);
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc == 2 && std::string(argv[1]) == "--describe") {
    std::printf("case=%s kind=%s dtype=%s layout=%s\n", BENCH_STR(BENCH_CASE), kKind, In::name,
                kLayout);
    return 0;
  }
  const Options opt = parse(argc, argv);
  const Shape s = opt.shape;
  init();

  Host h;
  h.a = randomUniform<In>(static_cast<size_t>(s.M * s.K), opt.seed, 1);
  if (kW4A16) {
    std::mt19937_64 rng(opt.seed * 7919 + 2);
    h.packed.resize(static_cast<size_t>(s.N * s.K / 2));
    for (uint8_t &x : h.packed)
      x = static_cast<uint8_t>(rng() & 255);
    std::uniform_real_distribution<float> scale(0.02f, 0.2f);
    h.scales.resize(static_cast<size_t>(s.N * (s.K / kGroup)));
    for (uint16_t &x : h.scales)
      x = toHalf(scale(rng));
  } else {
    h.b = randomUniform<In>(static_cast<size_t>(s.K * s.N), opt.seed, 2);
  }
  if (kEpilogue == Epilogue::BiasGelu)
    h.bias = randomUniform<Out>(static_cast<size_t>(s.N), opt.seed, 3);
  const size_t outCount = static_cast<size_t>(s.M * s.N), outBytes = outCount * sizeof(Out::Bits);
  const std::vector<uint8_t> weights = kW4A16 ? w4DeviceWeights(h, s) : std::vector<uint8_t>{};
  DeviceBuffer da = upload(h.a), db = kW4A16 ? upload(weights) : upload(h.b),
               dc = poisoned(outBytes + kSlackBytes);
  DeviceBuffer dscales(std::max<size_t>(h.scales.size(), 1) * 2);
  if (!h.scales.empty())
    CK(cuMemcpyHtoD(dscales, h.scales.data(), h.scales.size() * 2));
  DeviceBuffer dbias(std::max<size_t>(h.bias.size(), 1) * sizeof(Out::Bits));
  if (!h.bias.empty())
    CK(cuMemcpyHtoD(dbias, h.bias.data(), h.bias.size() * sizeof(Out::Bits)));
  Operands ops;
  ops.a = da;
  ops.b = db;
  ops.bias = dbias;
  ops.c = dc;
  ops.alpha = h.alpha;
  ops.scales = dscales;

  CUresult r = launch(ops, s);
  if (r == CUDA_SUCCESS)
    r = cuCtxSynchronize();
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr;
    cuGetErrorName(r, &name);
    return fail(s, std::string("launch:") + (name ? name : "?"));
  }

  // Correctness: every output written, nothing past the end, sampled entries near the reference.
  std::vector<Out::Bits> out = download<Out::Bits>(dc, outCount);
  long long unwritten = 0;
  for (Out::Bits x : out)
    unwritten += std::isnan(Out::decode(x));
  const bool tailOk = tailIntact(dc, outBytes);
  std::vector<std::pair<int64_t, int64_t>> entries;
  if (static_cast<double>(s.M) * s.N * s.K <= static_cast<double>(1 << 28)) {
    for (int64_t i = 0; i < s.M; ++i)
      for (int64_t j = 0; j < s.N; ++j)
        entries.emplace_back(i, j);
  } else {
    // The four corners (ragged edges), then seeded random entries.
    entries = {{0, 0}, {0, s.N - 1}, {s.M - 1, 0}, {s.M - 1, s.N - 1}};
    std::mt19937_64 rng(opt.seed);
    std::uniform_int_distribution<int64_t> ri(0, s.M - 1), rj(0, s.N - 1);
    for (int n = 0; n < opt.samples; ++n)
      entries.emplace_back(ri(rng), rj(rng));
  }
  std::vector<double> ref(entries.size());
  double refSq = 0;
  for (size_t e = 0; e < entries.size(); ++e) {
    ref[e] = reference(h, s, entries[e].first, entries[e].second);
    refSq += ref[e] * ref[e];
  }
  const double refRms = std::sqrt(refSq / entries.size());
  // Per entry: within two ulps of the output dtype plus 1% of the reference's RMS (fp32
  // accumulation in another order, gelu near zero); overall: ||out - ref|| / ||ref|| small.
  double errSq = 0, maxErr = 0;
  long long bad = 0;
  for (size_t e = 0; e < entries.size(); ++e) {
    double got = Out::decode(out[entries[e].first * s.N + entries[e].second]);
    double d = std::fabs(got - ref[e]);
    if (std::isnan(d) || d > Out::rtol * std::fabs(ref[e]) + 1e-2 * refRms)
      ++bad;
    errSq += std::isnan(d) ? 0 : d * d;
    maxErr = std::isnan(d) ? maxErr : std::max(maxErr, d);
  }
  const double relErr = refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
  const double relTol = Out::rtol * 2;
  std::string why;
  if (unwritten)
    why += "unwritten=" + std::to_string(unwritten) + ";";
  if (!tailOk)
    why += "wrote_past_end;";
  if (bad)
    why += "bad_entries=" + std::to_string(bad) + "/" + std::to_string(entries.size()) + ";";
  if (!(relErr < relTol))
    why += "rel_err=" + std::to_string(relErr) + ">" + std::to_string(relTol) + ";";
  if (!why.empty())
    return fail(s, why);

  // Packed int4 weights are a quarter of their float16 peer's bytes: at decode shapes they would
  // stay in the 50 MB L2 from one launch to the next while the peer's cannot. W4A16 launches
  // rotate through copies of the weights and scales totalling at least 150 MB, so every launch
  // reads its weights from DRAM as the peer does.
  std::vector<DeviceBuffer> copiesB, copiesS;
  std::vector<Operands> rotation{ops};
  if (kW4A16) {
    const size_t bytes = h.packed.size() + h.scales.size() * 2;
    const size_t n = std::min<size_t>(64, (150u << 20) / std::max<size_t>(bytes, 1) + 1);
    for (size_t c = 1; c < n; ++c) {
      copiesB.push_back(upload(weights));
      copiesS.push_back(upload(h.scales));
      Operands o = ops;
      o.b = copiesB.back();
      o.scales = copiesS.back();
      rotation.push_back(o);
    }
  }
  size_t turn = 0;
  const double ms = medianMs([&] { CK(launch(rotation[turn++ % rotation.size()], s)); }, opt.warmup,
                             opt.reps, opt.batch);
  const double flop = 2.0 * s.M * s.N * s.K;
  printHead(s);
  std::printf(" ms=%.4f tflops=%.1f rel_err=%.2e max_err=%.2e checked=%zu warmup=%d reps=%d "
              "batch=%d status=ok\n",
              ms, flop / ms / 1e9, relErr, maxErr, entries.size(), opt.warmup, opt.reps, opt.batch);
#ifdef BENCH_TRACE
  // The copy of the weights used longest ago, as a timed launch would read it.
  benchtrace::dumpTrace(BENCH_NS::tilec_detail::state().slots[0].module,
                        [&] { return launch(rotation[turn % rotation.size()], s); });
#endif
  return 0;
}
