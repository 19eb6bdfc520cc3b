// cp.async with an L2 cache hint, compiled by nvcc (CUDA 13.0) and run on the H200 (2026-12-04):
//   nvcc -arch=sm_90a -O2 -o t l2-hint-cpasync-2026-12-04.cu && for v in 0 1 2 3 4; do ./t $v; done
// (and the same with -arch=sm_80): every variant ran without error and copied correctly, and
// cuobjdump -sass showed the policy as the copy's memory descriptor (UMOV UR5, 0x14f00000;
// LDGSTS.E.BYPASS.128 [R7], desc[UR4][R2.64]). tilec's two-pass RMSNorm with the same PTX
// (docs/results/l2-hints-tried-2026-12-04.patch), whose shared addresses are the dynamic shared
// memory base plus an offset, got LDGSTS [R12+UR0], desc[UR1][R8.64] and died of an illegal
// instruction (docs/results.md, 2026-12-04 afternoon). This file was written again from the one
// that ran (the same five variants) and has not been run since.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

template <int V> __global__ void k(const int4 *in, int4 *out, int n) {
  __shared__ int4 s[256];
  int i = blockIdx.x * 256 + threadIdx.x;
  uint32_t dst = static_cast<uint32_t>(__cvta_generic_to_shared(&s[threadIdx.x]));
  const int4 *src = in + (i < n ? i : 0);
  if (V == 0) {
    asm volatile("{ .reg .b64 p; createpolicy.fractional.L2::evict_last.b64 p, 1.0; "
                 "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, p; }" ::"r"(dst),
                 "l"(src)
                 : "memory");
  } else if (V == 1) {
    asm volatile("{ .reg .b64 p; createpolicy.fractional.L2::evict_first.b64 p, 1.0; "
                 "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, p; }" ::"r"(dst),
                 "l"(src)
                 : "memory");
  } else if (V == 2) {
    uint64_t p = 0x14F0000000000000ull;
    asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;" ::"r"(dst),
                 "l"(src), "l"(p)
                 : "memory");
  } else if (V == 3) {
    int bytes = i < n ? 16 : 0;
    asm volatile("{ .reg .b64 p; createpolicy.fractional.L2::evict_last.b64 p, 1.0; "
                 "cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, p; }" ::"r"(dst),
                 "l"(src), "r"(bytes)
                 : "memory");
  } else {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src) : "memory");
  }
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
  __syncthreads();
  if (i < n)
    out[i] = s[threadIdx.x];
}

template <int V> int run(const int4 *in, int4 *out, int n) {
  cudaMemset(out, 0, n * 16);
  k<V><<<(n + 255) / 256, 256>>>(in, out, n);
  cudaError_t e = cudaDeviceSynchronize();
  int4 h[4];
  cudaMemcpy(h, out + 1000, sizeof h, cudaMemcpyDeviceToHost);
  printf("variant %d: %s, out[1000].x=%d\n", V, cudaGetErrorString(e), h[0].x);
  return e != cudaSuccess;
}

int main(int argc, char **argv) {
  int v = argc > 1 ? atoi(argv[1]) : 0, n = 1 << 20;
  int4 *in, *out;
  cudaMalloc(&in, n * 16);
  cudaMalloc(&out, n * 16);
  int4 *h = new int4[n];
  for (int i = 0; i < n; ++i)
    h[i] = {i, i, i, i};
  cudaMemcpy(in, h, n * 16, cudaMemcpyHostToDevice);
  switch (v) {
  case 0:
    return run<0>(in, out, n);
  case 1:
    return run<1>(in, out, n);
  case 2:
    return run<2>(in, out, n);
  case 3:
    return run<3>(in, out, n);
  default:
    return run<4>(in, out, n);
  }
}
