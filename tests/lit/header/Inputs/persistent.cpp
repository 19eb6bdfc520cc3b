// A persistent kernel (gemm_bias_gelu, a GEMM and so persistent by default, 128 x 128 tiles) is
// launched on min(its grid's blocks, the SMs times its blocks per SM) blocks along x: the fake
// driver's devices have 132 SMs.
#include "gemm_bias_gelu.h"

#include "expect.h"
#include "fake_cuda.h"

#include <cstdio>

namespace g = tile::gemm_bias_gelu;

int main() {
  static_assert(g::gemm_bias_gelu_info::persistent_blocks_per_sm == 1);
  CUcontext ctx = fake_cuda_create_context(0);
  CUdeviceptr a = 0x10000, b = 0x20000, bias = 0x30000, c = 0x40000;
  // 4096 x 4096: a grid of 32 x 32 blocks, more than fit, so one block per SM.
  EXPECT(g::gemm_bias_gelu(nullptr, a, b, bias, c, 4096, 64, 4096) == CUDA_SUCCESS);
  fake_cuda_launch l = fake_cuda_last_launch();
  EXPECT(l.grid[0] == 132 && l.grid[1] == 1 && l.grid[2] == 1);
  EXPECT(l.block == g::gemm_bias_gelu_info::threads_per_block);
  // 300 x 200 (M x N): 2 x 3 blocks, fewer than the SMs: one block each.
  EXPECT(g::gemm_bias_gelu(nullptr, a, b, bias, c, 300, 64, 200) == CUDA_SUCCESS);
  l = fake_cuda_last_launch();
  EXPECT(l.grid[0] == 6 && l.grid[1] == 1 && l.grid[2] == 1);
  // The grid function still gives the grid the kernel walks.
  ::tilec::rt::Grid grid = g::gemm_bias_gelu_info::grid(300, 64, 200);
  EXPECT(grid.x == 2 && grid.y == 3 && grid.z == 1);
  // A grid of more blocks than the kernel numbers in 32 bits is refused before any launch.
  long before = fake_cuda_launches(ctx);
  EXPECT(g::gemm_bias_gelu(nullptr, a, b, bias, c, 65535 * 128, 64, 40000 * 128) ==
         CUDA_ERROR_INVALID_VALUE);
  EXPECT(fake_cuda_launches(ctx) == before);
  std::printf("%s\n", g::last_error());
  std::printf("persistent: ok\n");
  return 0;
}
