/* Calls a kernel's C API from C11: an argument error comes back as CUDA_ERROR_INVALID_VALUE with
 * last_error() naming the argument; a good launch reaches the (fake) driver. */
#include "vector_add_c.h"

#include "fake_cuda.h"

#include <stdio.h>

int main(void) {
  int64_t grid[3];
  fake_cuda_create_context(0);
  tile_vector_add_vector_add_grid(1025, grid);
  printf("threads %d, grid %lld %lld %lld\n", (int)tile_vector_add_vector_add_threads_per_block,
         (long long)grid[0], (long long)grid[1], (long long)grid[2]);
  CUresult r = tile_vector_add_vector_add(NULL, 0x1000, 0x2000, 0x3001, 1025);
  printf("misaligned: %d, %s\n", (int)r, tile_vector_add_last_error());
  r = tile_vector_add_vector_add(NULL, 0x1000, 0x2000, 0x3000, 1025);
  printf("launch: %d, grid %u\n", (int)r, fake_cuda_last_launch().grid[0]);
  tile_vector_add_unload();
  return 0;
}
