// The "generated header" of tests/bench/host-test.sh: tile::bench::mock::gemm with the signature
// of the BENCH_KIND_ being built, computing the GEMM on the host (device pointers are host
// pointers under mock_cuda.cpp). MOCK_FAULT injects the faults the benchmark must catch:
// unwritten (skips the last column), overrun (writes past the end), wrong (a 32 x 32 block in the
// middle off by more than its magnitude, as a kernel that botches one tile would),
// launch (returns an error). Only the first launch computes; the timed ones return at once.
#pragma once

#include "gpu_common.h"

#include <cstdlib>
#include <string>

namespace tile::bench::mock {

inline float mockDecodeE4M3(uint8_t b) {
  int e = (b >> 3) & 15, m = b & 7;
  float mag = e == 0 ? std::ldexp(static_cast<float>(m), -9) : std::ldexp(1.0f + m / 8.0f, e - 7);
  return b & 0x80 ? -mag : mag;
}

#if defined(BENCH_KIND_bias_gelu)
using InBits = uint16_t;
inline float in(InBits b) { return gputest::fromBf16(b); }
inline uint16_t out(float f) { return gputest::toBf16(f); }
#elif defined(BENCH_KIND_fp8_nt)
using InBits = uint8_t;
inline float in(InBits b) { return mockDecodeE4M3(b); }
inline uint16_t out(float f) { return gputest::toBf16(f); }
#else
using InBits = uint16_t;
inline float in(InBits b) { return gputest::fromHalf(b); }
inline uint16_t out(float f) { return gputest::toHalf(f); }
#endif

/// C[i, j] = epilogue(sum_k A(i, k) B(k, j)), A stored (K, M) when aKM, B stored (N, K) when bNK.
template <class Epilogue>
CUresult compute(CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, int64_t M, int64_t K, int64_t N,
                 bool aKM, bool bNK, Epilogue epilogue) {
  static bool done = false;
  const char *env = std::getenv("MOCK_FAULT");
  const std::string fault = env ? env : "";
  if (fault == "launch")
    return CUDA_ERROR_LAUNCH_FAILED;
  if (done)
    return CUDA_SUCCESS;
  done = true;
  auto *a = reinterpret_cast<const InBits *>(A);
  auto *b = reinterpret_cast<const InBits *>(B);
  auto *c = reinterpret_cast<uint16_t *>(C);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      if (fault == "unwritten" && j == N - 1)
        continue;
      float acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += in(a[aKM ? k * M + i : i * K + k]) * in(b[bNK ? j * K + k : k * N + j]);
      float v = epilogue(acc, j);
      if (fault == "wrong" && i / 32 == M / 64 && j / 32 == N / 64)
        v += 1.0f + std::fabs(v);
      c[i * N + j] = out(v);
    }
  if (fault == "overrun")
    c[M * N] = 0;
  return CUDA_SUCCESS;
}

#if defined(BENCH_KIND_relu)
inline CUresult gemm(CUstream, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, int64_t M, int64_t K,
                     int64_t N) {
  return compute(A, B, C, M, K, N, false, false, [](float x, int64_t) { return std::max(x, 0.f); });
}
#elif defined(BENCH_KIND_bias_gelu)
inline CUresult gemm(CUstream, CUdeviceptr A, CUdeviceptr B, CUdeviceptr bias, CUdeviceptr C,
                     int64_t M, int64_t K, int64_t N) {
  auto *bs = reinterpret_cast<const uint16_t *>(bias);
  return compute(A, B, C, M, K, N, false, true, [&](float x, int64_t j) {
    float y = x + gputest::fromBf16(bs[j]);
    return 0.5f * y * (1.f + std::tanh(0.7978845608f * (y + 0.044715f * y * y * y)));
  });
}
#elif defined(BENCH_KIND_tn_scale)
inline CUresult gemm(CUstream, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, float alpha, int64_t K,
                     int64_t M, int64_t N) {
  return compute(A, B, C, M, K, N, true, false, [&](float x, int64_t) { return alpha * x; });
}
#else // nt, fp8_nt
inline CUresult gemm(CUstream, CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, int64_t M, int64_t K,
                     int64_t N) {
  return compute(A, B, C, M, K, N, false, true, [](float x, int64_t) { return x; });
}
#endif

} // namespace tile::bench::mock
