// gemm_relu (fp16, C = relu(A B)) and gemm_bias_gelu (bf16, C = gelu_tanh(A B^T + bias)) through
// their generated headers, compiled for both --arch sm_90a and --arch sm_80: error against a
// float64 CPU reference on fresh random inputs with a poisoned output at ragged and square
// sizes, and time at 4096^3 (the cuBLAS peer is measured by scripts/peers.py in the same run).
#include "gpu_common.h"
#ifdef TILEC_GPU_TEST_HIP // AMD (scripts/gpu-test-hip.sh): the samples as written, on MFMA
#include "gemm_bias_gelu.h"
#include "gemm_relu.h"
#else
#include "sm_80/gemm_bias_gelu.h"
#include "sm_80/gemm_relu.h"
#include "sm_90a/gemm_bias_gelu.h"
#include "sm_90a/gemm_relu.h"
#include "tiled/gemm_bias_gelu.h"
#include "tiled/gemm_relu.h"
#endif

using namespace gputest;

namespace {

using ReluFn = CUresult (*)(CUstream, LaunchPtr, LaunchPtr, LaunchPtr, int64_t, int64_t, int64_t);
using GeluFn = CUresult (*)(CUstream, LaunchPtr, LaunchPtr, LaunchPtr, LaunchPtr, int64_t, int64_t,
                            int64_t);

double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

struct Case {
  int64_t M, N, K;
  bool full; // full reference, else 4096 sampled entries
};

/// Calls `entry(i, j)` for the outputs a case checks against the reference.
template <class Entry> void forCheckedEntries(const Case &c, std::mt19937 &rng, Entry entry) {
  if (c.full) {
    for (int64_t i = 0; i < c.M; ++i)
      for (int64_t j = 0; j < c.N; ++j)
        entry(i, j);
  } else {
    std::uniform_int_distribution<int64_t> ri(0, c.M - 1), rj(0, c.N - 1);
    for (int s = 0; s < 4096; ++s)
      entry(ri(rng), rj(rng));
  }
}

/// Prints a case's result line, timing `launch` on the large (sampled) case; returns failures.
int report(const char *kernel, const char *arch, const Case &c, const ErrorStats &e,
           long long unwritten, bool ok, const std::function<void()> &launch) {
  double ms = c.full ? 0 : medianMs(launch, 5, 20);
  std::printf("%-14s %-7s M=%-5lld N=%-5lld K=%-5lld rel.err %.2e unwritten %lld %s", kernel, arch,
              (long long)c.M, (long long)c.N, (long long)c.K, e.rel, unwritten, ok ? "ok" : "FAIL");
  if (ms > 0)
    printTflops(ms, 2.0 * c.M * c.N * c.K);
  std::printf("\n");
  return ok ? 0 : 1;
}

int runRelu(const char *arch, ReluFn fn, std::mt19937 &rng, const Case &c) {
  std::vector<uint16_t> a = randomHalves(c.M * c.K, rng), b = randomHalves(c.K * c.N, rng);
  const size_t outBytes = c.M * c.N * 2;
  DeviceBuffer da = upload(a), db = upload(b), dc = poisoned(outBytes + kSlackBytes);
  CK(fn(nullptr, da, db, dc, c.M, c.K, c.N));
  CK(cuCtxSynchronize());
  std::vector<uint16_t> out = download<uint16_t>(dc, c.M * c.N);
  bool tailOk = tailIntact(dc, outBytes);
  std::vector<float> got;
  std::vector<double> ref;
  auto entry = [&](int64_t i, int64_t j) {
    double acc = 0;
    for (int64_t k = 0; k < c.K; ++k)
      acc += static_cast<double>(fromHalf(a[i * c.K + k])) * fromHalf(b[k * c.N + j]);
    ref.push_back(std::max(acc, 0.0));
    got.push_back(fromHalf(out[i * c.N + j]));
  };
  forCheckedEntries(c, rng, entry);
  // Every output must have been written (no NaN poison left), checked in full.
  long long unwritten = countNaN(out, fromHalf);
  ErrorStats e = relError(got, ref);
  bool ok = e.nan == 0 && unwritten == 0 && e.rel < 2e-3 && tailOk;
  return report("gemm_relu", arch, c, e, unwritten, ok,
                [&] { CK(fn(nullptr, da, db, dc, c.M, c.K, c.N)); });
}

int runGelu(const char *arch, GeluFn fn, std::mt19937 &rng, const Case &c) {
  std::vector<uint16_t> a = randomBf16s(c.M * c.K, rng), b = randomBf16s(c.N * c.K, rng),
                        bias = randomBf16s(c.N, rng);
  DeviceBuffer da = upload(a), db = upload(b), dbias = upload(bias),
               dc = poisoned(c.M * c.N * 2 + kSlackBytes);
  CK(fn(nullptr, da, db, dbias, dc, c.M, c.K, c.N));
  CK(cuCtxSynchronize());
  std::vector<uint16_t> out = download<uint16_t>(dc, c.M * c.N);
  std::vector<float> got;
  std::vector<double> ref;
  auto entry = [&](int64_t i, int64_t j) {
    double acc = 0;
    for (int64_t k = 0; k < c.K; ++k)
      acc += static_cast<double>(fromBf16(a[i * c.K + k])) * fromBf16(b[j * c.K + k]);
    ref.push_back(geluTanh(acc + fromBf16(bias[j])));
    got.push_back(fromBf16(out[i * c.N + j]));
  };
  forCheckedEntries(c, rng, entry);
  long long unwritten = countNaN(out, fromBf16);
  ErrorStats e = relError(got, ref);
  // A handful of outputs near zero (gelu of a large negative value) makes the relative norm
  // meaningless: accept an absolute error at bfloat16 resolution too.
  double maxAbs = 0;
  for (size_t i = 0; i < got.size(); ++i)
    maxAbs = std::max(maxAbs, std::fabs(got[i] - ref[i]));
  bool ok = e.nan == 0 && unwritten == 0 && (e.rel < 1e-2 || maxAbs < 1e-2);
  return report("gemm_bias_gelu", arch, c, e, unwritten, ok,
                [&] { CK(fn(nullptr, da, db, dbias, dc, c.M, c.K, c.N)); });
}

} // namespace

int main() {
  init();
  std::mt19937 rng = freshRng();
  int failures = 0;
  const Case cases[] = {{1, 1, 16, true},
                        {1000, 1000, 1000, true},
                        {128, 256, 64, true},
                        {333, 517, 200, true},
                        {4096, 4096, 4096, false}};
  // The sm_90a builds are persistent: they walk more tiles than fit on the GPU at once (4096^3:
  // 1024 tiles of 128x128), with ragged edges (1000^3, 333x517x200) and a single tile. "tiled":
  // --no-persistent, one block per tile (gemm_bias_gelu at 128x256x64).
#ifdef TILEC_GPU_TEST_HIP
  for (const Case &c : cases) {
    failures += runRelu(kMainArch, tile::gemm_relu::matmul_relu, rng, c);
    failures += runGelu(kMainArch, tile::gemm_bias_gelu::gemm_bias_gelu, rng, c);
  }
#else
  for (const Case &c : cases) {
    failures += runRelu("tiled", tile::tiled::gemm_relu::matmul_relu, rng, c);
    failures += runGelu("tiled", tile::tiled::gemm_bias_gelu::gemm_bias_gelu, rng, c);
  }
  for (const Case &c : cases) {
    failures += runRelu("sm_90a", tile::gemm_relu::matmul_relu, rng, c);
    failures += runRelu("sm_80", tile::sm80::gemm_relu::matmul_relu, rng, c);
    failures += runGelu("sm_90a", tile::gemm_bias_gelu::gemm_bias_gelu, rng, c);
    failures += runGelu("sm_80", tile::sm80::gemm_bias_gelu::gemm_bias_gelu, rng, c);
  }
#endif
  return verdict("gemm", failures);
}
