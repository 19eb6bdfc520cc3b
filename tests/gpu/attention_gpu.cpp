// flash_attention (non-causal and causal, both arch paths) and mla_decode through their
// generated headers: error against a float64 CPU reference on fresh random inputs with
// poisoned outputs, ragged sequence lengths included, and time at a large shape.
#include "causal/flash_attention.h"
#include "d64/flash_attention.h"
#include "d64_causal/flash_attention.h"
#include "d96/flash_attention.h"
#include "d96_causal/flash_attention.h"
#include "fast/flash_attention.h"
#include "gpu_common.h"
#include "mla/mla_decode.h"
#include "mla16/mla_decode_split.h"
#include "mla64/mla_decode_split.h"
#include "mla_persistent/mla_decode.h"
#include "mla_policy/mla_decode.h"
#include "mla_split_persistent/mla_decode_split.h"
#include "mla_split_policy/mla_decode_split.h"
#include "overlap/flash_attention.h"
#include "overlap_causal/flash_attention.h"
#include "overlap_pp/flash_attention.h"
#include "overlap_pp_causal/flash_attention.h"
#include "persistent/flash_attention.h"
#include "persistent_causal/flash_attention.h"
#include "sm_80/flash_attention.h"
#include "sm_80/mla_decode_split.h"
#include "sm_90a/flash_attention.h"
#include "sm_90a/mla_decode_split.h"

#include <memory>

using namespace gputest;

namespace {

using FlashFn = CUresult (*)(CUstream, CUdeviceptr, CUdeviceptr, CUdeviceptr, CUdeviceptr, int64_t,
                             int64_t, int64_t);

/// `misaligned`: K and V start 2 bytes into their allocations, where TMA cannot address them
/// (the sm_90a kernel's producer then loads them element by element). D: the head dimension the
/// kernel was compiled for.
int runFlash(const char *name, FlashFn fn, bool causal, std::mt19937 &rng, int64_t B, int64_t S,
             int64_t H, bool timeIt, bool misaligned = false, int64_t D = 128) {
  if (!selected(name))
    return 0;
  size_t n = static_cast<size_t>(B * S * H * D);
  auto q = randomHalves(n, rng), k = randomHalves(n, rng), v = randomHalves(n, rng);
  const size_t shift = misaligned ? 2 : 0;
  DeviceBuffer dq = upload(q), dk(n * 2 + shift), dv(n * 2 + shift),
               dout = poisoned(n * 2 + kSlackBytes);
  CK(cuMemcpyHtoD(dk + shift, k.data(), n * 2));
  CK(cuMemcpyHtoD(dv + shift, v.data(), n * 2));
  CK(fn(nullptr, dq, dk + shift, dv + shift, dout, B, S, H));
  CK(cuCtxSynchronize());
  std::vector<uint16_t> out = download<uint16_t>(dout, n);
  long long unwritten = countNaN(out, fromHalf);
  // Reference on a sample of query rows (all of them for small problems).
  std::vector<float> got;
  std::vector<double> ref;
  auto at = [&](const std::vector<uint16_t> &t, int64_t b, int64_t s, int64_t h, int64_t d) {
    return static_cast<double>(fromHalf(t[((b * S + s) * H + h) * D + d]));
  };
  std::uniform_int_distribution<int64_t> rb(0, B - 1), rs(0, S - 1), rh(0, H - 1);
  int64_t rows = B * S * H <= 4096 ? B * S * H : 64;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t b, s, h;
    if (rows == B * S * H) {
      b = r / (S * H), s = (r / H) % S, h = r % H;
    } else {
      b = rb(rng), s = rs(rng), h = rh(rng);
    }
    int64_t last = causal ? s : S - 1;
    std::vector<double> p(last + 1);
    double mx = -1e300, sum = 0;
    for (int64_t j = 0; j <= last; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d)
        dot += at(q, b, s, h, d) * at(k, b, j, h, d);
      p[j] = dot / std::sqrt(static_cast<double>(D));
      mx = std::max(mx, p[j]);
    }
    for (double &x : p)
      sum += (x = std::exp(x - mx));
    for (int64_t d = 0; d < D; ++d) {
      double o = 0;
      for (int64_t j = 0; j <= last; ++j)
        o += p[j] * at(v, b, j, h, d);
      ref.push_back(o / sum);
      got.push_back(fromHalf(out[((b * S + s) * H + h) * D + d]));
    }
  }
  ErrorStats e = relError(got, ref);
  bool ok = e.nan == 0 && unwritten == 0 && e.rel < 5e-3;
  std::printf("%-22s B=%lld S=%-5lld H=%-3lld%s rel.err %.2e unwritten %lld %s", name, (long long)B,
              (long long)S, (long long)H, misaligned ? " K,V+2B" : "", e.rel, unwritten,
              ok ? "ok" : "FAIL");
  if (timeIt) {
    double ms =
        medianMs([&] { CK(fn(nullptr, dq, dk + shift, dv + shift, dout, B, S, H)); }, 3, 10);
    printTflops(ms, 4.0 * B * H * S * S * D * (causal ? 0.5 : 1.0));
  }
  std::printf("\n");
  return ok ? 0 : 1;
}

/// Runs an MLA decode: (Q, Q_pe, KV, K_pe, Output, batch, seqlen).
using MlaFn = std::function<void(CUdeviceptr, CUdeviceptr, CUdeviceptr, CUdeviceptr, CUdeviceptr,
                                 int64_t, int64_t)>;

/// mla_decode_split: partial results over num_split = 4 sequence chunks, then the combine kernel.
/// The partial results live across calls (allocated, and poisoned, when the batch changes), so
/// that a timed call is the two kernels alone.
template <auto Partial, auto Combine, int64_t Splits> MlaFn splitMla() {
  struct Scratch {
    int64_t batch = -1;
    std::unique_ptr<DeviceBuffer> partial, lse;
  };
  auto scratch = std::make_shared<Scratch>();
  return [scratch](CUdeviceptr q, CUdeviceptr qpe, CUdeviceptr kv, CUdeviceptr kpe, CUdeviceptr out,
                   int64_t batch, int64_t seqlen) {
    const int64_t heads = 128, dim = 512;
    if (scratch->batch != batch) {
      scratch->batch = batch;
      scratch->partial = std::make_unique<DeviceBuffer>(nanFloats(batch * heads * Splits * dim));
      scratch->lse = std::make_unique<DeviceBuffer>(nanFloats(batch * heads * Splits));
    }
    CK(Partial(nullptr, q, qpe, kv, kpe, *scratch->partial, *scratch->lse, batch, seqlen));
    CK(Combine(nullptr, *scratch->partial, *scratch->lse, out, batch));
  };
}

int runMla(const char *name, const MlaFn &fn, std::mt19937 &rng, int64_t batch, int64_t seqlen,
           bool timeIt) {
  if (!selected(name))
    return 0;
  const int64_t heads = 128, dim = 512, pe = 64;
  auto q = randomHalves(batch * heads * dim, rng), qpe = randomHalves(batch * heads * pe, rng);
  auto kv = randomHalves(batch * seqlen * dim, rng), kpe = randomHalves(batch * seqlen * pe, rng);
  size_t n = static_cast<size_t>(batch * heads * dim);
  DeviceBuffer dq = upload(q), dqpe = upload(qpe), dkv = upload(kv), dkpe = upload(kpe),
               dout = poisoned(n * 2 + kSlackBytes);
  fn(dq, dqpe, dkv, dkpe, dout, batch, seqlen);
  CK(cuCtxSynchronize());
  std::vector<uint16_t> out = download<uint16_t>(dout, n);
  long long unwritten = countNaN(out, fromHalf);
  std::vector<float> got;
  std::vector<double> ref;
  std::uniform_int_distribution<int64_t> rb(0, batch - 1), rh(0, heads - 1);
  int rows = timeIt ? 16 : static_cast<int>(batch * heads);
  for (int r = 0; r < rows; ++r) {
    int64_t b = timeIt ? rb(rng) : r / heads, h = timeIt ? rh(rng) : r % heads;
    std::vector<double> p(seqlen);
    double mx = -1e300, sum = 0;
    for (int64_t j = 0; j < seqlen; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < dim; ++d)
        dot += double(fromHalf(q[(b * heads + h) * dim + d])) *
               fromHalf(kv[(b * seqlen + j) * dim + d]);
      for (int64_t d = 0; d < pe; ++d)
        dot += double(fromHalf(qpe[(b * heads + h) * pe + d])) *
               fromHalf(kpe[(b * seqlen + j) * pe + d]);
      p[j] = dot / std::sqrt(double(dim + pe));
      mx = std::max(mx, p[j]);
    }
    for (double &x : p)
      sum += (x = std::exp(x - mx));
    for (int64_t d = 0; d < dim; ++d) {
      double o = 0;
      for (int64_t j = 0; j < seqlen; ++j)
        o += p[j] * fromHalf(kv[(b * seqlen + j) * dim + d]);
      ref.push_back(o / sum);
      got.push_back(fromHalf(out[(b * heads + h) * dim + d]));
    }
  }
  ErrorStats e = relError(got, ref);
  bool ok = e.nan == 0 && unwritten == 0 && e.rel < 5e-3;
  std::printf("%-22s batch=%lld seqlen=%-5lld rel.err %.2e unwritten %lld %s", name,
              (long long)batch, (long long)seqlen, e.rel, unwritten, ok ? "ok" : "FAIL");
  if (timeIt) {
    double ms = medianMs([&] { fn(dq, dqpe, dkv, dkpe, dout, batch, seqlen); }, 3, 10);
    double bytes = 2.0 * batch * seqlen * (dim + pe);
    // FLOPs: Q K^T over dim + pe and P V over dim, for every head and key.
    double flop = 2.0 * batch * heads * seqlen * (dim + pe + dim);
    std::printf("  %.3f ms  %.1f GB/s of KV  %.1f TFLOP/s", ms, bytes / ms / 1e6, flop / ms / 1e9);
  }
  std::printf("\n");
  return ok ? 0 : 1;
}

} // namespace

int main() {
  init();
  std::mt19937 rng = freshRng();
  int failures = 0;
  failures +=
      runFlash("flash sm_90a", tile::flash_attention::flash_attention, false, rng, 1, 1, 1, false);
  failures += runFlash("flash sm_90a", tile::flash_attention::flash_attention, false, rng, 2, 300,
                       3, false);
  failures += runFlash("flash sm_80", tile::sm80::flash_attention::flash_attention, false, rng, 2,
                       300, 3, false);
  failures += runFlash("flash causal sm_90a", tile::flash_causal::flash_attention, true, rng, 1,
                       333, 2, false);
  failures += runFlash("flash sm_90a", tile::flash_attention::flash_attention, false, rng, 2, 300,
                       3, false, true);
  failures += runFlash("flash causal sm_90a", tile::flash_causal::flash_attention, true, rng, 1,
                       1000, 2, false, true);
  failures += runFlash("flash sm_90a", tile::flash_attention::flash_attention, false, rng, 1, 1000,
                       4, false);
  // Head dimension 64 (-D D=64), whose consumer warpgroups take turns by default.
  failures += runFlash("flash d64 turns", tile::d64::flash_attention::flash_attention, false, rng,
                       2, 300, 3, false, false, 64);
  failures += runFlash("flash d64 turns", tile::d64::flash_attention::flash_attention, false, rng,
                       1, 1, 1, false, false, 64);
  failures += runFlash("flash d64 turns", tile::d64::flash_attention::flash_attention, false, rng,
                       2, 300, 3, false, true, 64);
  failures += runFlash("flash causal d64 turns", tile::d64::flash_causal::flash_attention, true,
                       rng, 1, 333, 2, false, false, 64);
  failures += runFlash("flash causal d64 turns", tile::d64::flash_causal::flash_attention, true,
                       rng, 1, 1000, 2, false, true, 64);
  failures += runFlash("flash causal d64 turns", tile::d64::flash_causal::flash_attention, true,
                       rng, 8, 4096, 16, true, false, 64);
  // Head dimension 96 (-D D=96): K and V in panels of 64-byte swizzled lines.
  failures += runFlash("flash d96", tile::d96::flash_attention::flash_attention, false, rng, 2, 300,
                       3, false, false, 96);
  failures += runFlash("flash d96", tile::d96::flash_attention::flash_attention, false, rng, 2, 300,
                       3, false, true, 96);
  failures += runFlash("flash causal d96", tile::d96::flash_causal::flash_attention, true, rng, 1,
                       333, 2, false, false, 96);
  failures += runFlash("flash causal d96", tile::d96::flash_causal::flash_attention, true, rng, 1,
                       1000, 2, false, true, 96);
  failures += runFlash("flash d96", tile::d96::flash_attention::flash_attention, false, rng, 8,
                       4096, 16, true, false, 96);
  failures += runFlash("flash causal d96", tile::d96::flash_causal::flash_attention, true, rng, 8,
                       4096, 16, true, false, 96);
  // Persistent builds (--persistent): each block walks several (batch, head, row block) tiles.
  failures += runFlash("flash persist", tile::persistent::flash_attention::flash_attention, false,
                       rng, 2, 300, 3, false);
  failures += runFlash("flash causal persist", tile::persistent::flash_causal::flash_attention,
                       true, rng, 1, 1000, 2, false);
  failures += runFlash("flash persist", tile::persistent::flash_attention::flash_attention, false,
                       rng, 8, 4096, 16, true);
  failures += runFlash("flash causal persist", tile::persistent::flash_causal::flash_attention,
                       true, rng, 8, 4096, 16, true);
  // The overlap of P@V with the next softmax (--overlap-gemms; K and V on rings of their own),
  // with the element-by-element producer too (K, V + 2 bytes), and persistent.
  failures += runFlash("flash overlap", tile::overlap::flash_attention::flash_attention, false, rng,
                       2, 300, 3, false);
  failures += runFlash("flash overlap", tile::overlap::flash_attention::flash_attention, false, rng,
                       2, 300, 3, false, true);
  failures += runFlash("flash overlap", tile::overlap::flash_attention::flash_attention, false, rng,
                       1, 1, 1, false);
  failures += runFlash("flash causal overlap", tile::overlap::flash_causal::flash_attention, true,
                       rng, 1, 333, 2, false);
  failures += runFlash("flash causal overlap", tile::overlap::flash_causal::flash_attention, true,
                       rng, 1, 1000, 2, false, true);
  failures += runFlash("flash fast-math", tile::fast::flash_attention::flash_attention, false, rng,
                       2, 300, 3, false);
  // The overlap with FlashAttention-3's turns (--overlap-gemms --ping-pong), causal persistent.
  failures += runFlash("flash overlap turns", tile::overlap_pp::flash_attention::flash_attention,
                       false, rng, 2, 300, 3, false);
  failures += runFlash("flash overlap turns", tile::overlap_pp::flash_attention::flash_attention,
                       false, rng, 2, 300, 3, false, true);
  failures += runFlash("flash overlap turns", tile::overlap_pp::flash_attention::flash_attention,
                       false, rng, 1, 1, 1, false);
  failures +=
      runFlash("flash causal overlap turns", tile::overlap_pp::flash_causal::flash_attention, true,
               rng, 1, 1000, 2, false);
  failures +=
      runFlash("flash causal overlap turns", tile::overlap_pp::flash_causal::flash_attention, true,
               rng, 1, 333, 2, false, true);
  failures += runFlash("flash overlap turns", tile::overlap_pp::flash_attention::flash_attention,
                       false, rng, 8, 4096, 16, true);
  failures +=
      runFlash("flash causal overlap turns", tile::overlap_pp::flash_causal::flash_attention, true,
               rng, 8, 4096, 16, true);
  failures += runFlash("flash overlap", tile::overlap::flash_attention::flash_attention, false, rng,
                       8, 4096, 16, true);
  failures += runFlash("flash causal overlap", tile::overlap::flash_causal::flash_attention, true,
                       rng, 8, 4096, 16, true);
  failures += runFlash("flash fast-math", tile::fast::flash_attention::flash_attention, false, rng,
                       8, 4096, 16, true);
  failures += runFlash("flash sm_90a", tile::flash_attention::flash_attention, false, rng, 8, 4096,
                       16, true);
  failures += runFlash("flash causal sm_90a", tile::flash_causal::flash_attention, true, rng, 8,
                       4096, 16, true);
  MlaFn mla = [](CUdeviceptr q, CUdeviceptr qpe, CUdeviceptr kv, CUdeviceptr kpe, CUdeviceptr out,
                 int64_t batch, int64_t seqlen) {
    CK(tile::mla_decode::mla_decode(nullptr, q, qpe, kv, kpe, out, batch, seqlen));
  };
  MlaFn split90 = splitMla<tile::mla_decode_split::mla_decode_partial,
                           tile::mla_decode_split::mla_decode_combine, 4>();
  MlaFn mlaPolicy = [](CUdeviceptr q, CUdeviceptr qpe, CUdeviceptr kv, CUdeviceptr kpe,
                       CUdeviceptr out, int64_t batch, int64_t seqlen) {
    CK(tile::mla_policy::mla_decode(nullptr, q, qpe, kv, kpe, out, batch, seqlen));
  };
  MlaFn splitPolicy = splitMla<tile::mla_split_policy::mla_decode_partial,
                               tile::mla_split_policy::mla_decode_combine, 4>();
  MlaFn mlaPersistent = [](CUdeviceptr q, CUdeviceptr qpe, CUdeviceptr kv, CUdeviceptr kpe,
                           CUdeviceptr out, int64_t batch, int64_t seqlen) {
    CK(tile::mla_persistent::mla_decode(nullptr, q, qpe, kv, kpe, out, batch, seqlen));
  };
  MlaFn splitPersistent = splitMla<tile::mla_split_persistent::mla_decode_partial,
                                   tile::mla_split_persistent::mla_decode_combine, 4>();
  MlaFn split80 = splitMla<tile::sm80::mla_decode_split::mla_decode_partial,
                           tile::sm80::mla_decode_split::mla_decode_combine, 4>();
  MlaFn split16 =
      splitMla<tile::mla_split16::mla_decode_partial, tile::mla_split16::mla_decode_combine, 16>();
  MlaFn split64 =
      splitMla<tile::mla_split64::mla_decode_partial, tile::mla_split64::mla_decode_combine, 64>();
  failures += runMla("mla_decode sm_90a", mla, rng, 2, 1000, false);
  failures += runMla("mla_decode sm_90a", mla, rng, 64, 4096, true);
  failures += runMla("mla_decode sm_90a", mla, rng, 128, 8192, true);
  failures += runMla("mla_split sm_90a", split90, rng, 1, 1, false);
  failures += runMla("mla_split sm_90a", split90, rng, 2, 1000, false);
  failures += runMla("mla_split sm_80", split80, rng, 2, 1000, false);
  // The scores split over both warpgroups by the policy (--no-score-warpgroup).
  failures += runMla("mla_decode policy", mlaPolicy, rng, 2, 1000, false);
  failures += runMla("mla_split policy", splitPolicy, rng, 1, 1, false);
  failures += runMla("mla_split policy", splitPolicy, rng, 2, 1000, false);
  // Persistent blocks (--persistent) walking several tiles each: 2 x 70 and 2 x 4 x 20 tiles
  // on an H100's or H200's 132 SMs, seqlen not a multiple of the 64-key block.
  failures += runMla("mla_decode persist", mlaPersistent, rng, 2, 1000, false);
  failures += runMla("mla_decode persist", mlaPersistent, rng, 70, 200, false);
  failures += runMla("mla_split persist", splitPersistent, rng, 2, 1000, false);
  failures += runMla("mla_split persist", splitPersistent, rng, 20, 200, false);
  failures += runMla("mla_split sm_90a", split90, rng, 4, 16384, true);
  // Small batches, long context: 16 splits (-D num_split=16) fill the GPU.
  failures += runMla("mla_split16 sm_90a", split16, rng, 2, 1000, false);
  for (int64_t batch : {1, 2, 4, 8})
    failures += runMla("mla_split16 sm_90a", split16, rng, batch, 32768, true);
  // Batch 1 and 2 leave most SMs idle at 16 splits (32 and 64 blocks): 64 splits.
  failures += runMla("mla_split64 sm_90a", split64, rng, 2, 1000, false);
  for (int64_t batch : {1, 2, 4, 8})
    failures += runMla("mla_split64 sm_90a", split64, rng, batch, 32768, true);
  return verdict("attention", failures);
}
