/* Calls a kernel of the HIP C header from C11: an argument error comes back as hipErrorInvalidValue
 * with last_error() naming the argument; a good launch reaches the (fake) HIP library. */
#include "vector_add_c.h"

#include <stdio.h>

int main(void) {
  int64_t grid[3];
  tile_vector_add_vector_add_grid(1025, grid);
  printf("threads %d, grid %lld %lld %lld\n", (int)tile_vector_add_vector_add_threads_per_block,
         (long long)grid[0], (long long)grid[1], (long long)grid[2]);
  hipError_t r = tile_vector_add_vector_add(NULL, (hipDeviceptr_t)0x1000, (hipDeviceptr_t)0x2000,
                                            (hipDeviceptr_t)0x3001, 1025);
  printf("misaligned: %d, %s\n", (int)r, tile_vector_add_last_error());
  r = tile_vector_add_vector_add(NULL, (hipDeviceptr_t)0x1000, (hipDeviceptr_t)0x2000,
                                 (hipDeviceptr_t)0x3000, 1025);
  printf("launch: %d\n", (int)r);
  tile_vector_add_unload();
  return 0;
}
