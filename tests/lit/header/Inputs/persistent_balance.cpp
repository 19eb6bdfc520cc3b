// A persistent kernel whose tiles differ in work along x (causal attention: row block bx runs
// bx + 1 key blocks) is launched on the largest block count up to SMs x blocks per SM that is
// coprime with the grid's x extent, so that each block meets every row block; without causality
// (tiles alike) on all of them. The fake driver's devices have 132 SMs.
#include "causal/flash_attention.h"
#include "plain/flash_attention.h"

#include "expect.h"
#include "fake_cuda.h"

#include <cstdio>

int main() {
  fake_cuda_create_context(0);
  CUdeviceptr q = 0x10000, k = 0x20000, v = 0x30000, o = 0x40000;
  // S 4096: 32 row blocks x 16 heads x 8 batches; 132 and 32 share 4, so 131 blocks.
  EXPECT(tile::causal::flash_attention(nullptr, q, k, v, o, 8, 4096, 16) == CUDA_SUCCESS);
  fake_cuda_launch l = fake_cuda_last_launch();
  EXPECT(l.grid[0] == 131 && l.grid[1] == 1 && l.grid[2] == 1);
  // S 1000: 8 row blocks; 131 again. 33 row blocks (S 4200) share 33 with 132: 131.
  EXPECT(tile::causal::flash_attention(nullptr, q, k, v, o, 8, 1000, 16) == CUDA_SUCCESS);
  EXPECT(fake_cuda_last_launch().grid[0] == 131);
  EXPECT(tile::causal::flash_attention(nullptr, q, k, v, o, 8, 4200, 16) == CUDA_SUCCESS);
  EXPECT(fake_cuda_last_launch().grid[0] == 131);
  // 3 row blocks x 43 heads = 129 tiles, fewer than the SMs: one block each.
  EXPECT(tile::causal::flash_attention(nullptr, q, k, v, o, 1, 300, 43) == CUDA_SUCCESS);
  EXPECT(fake_cuda_last_launch().grid[0] == 129);
  // Not causal: every SM.
  EXPECT(tile::plain::flash_attention(nullptr, q, k, v, o, 8, 4096, 16) == CUDA_SUCCESS);
  EXPECT(fake_cuda_last_launch().grid[0] == 132);
  std::printf("persistent balance: ok\n");
  return 0;
}
