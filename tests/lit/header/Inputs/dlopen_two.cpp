// Loads two libraries built from headers of one stem with different -D values (block=1024 and
// block=256) with dlopen(RTLD_LOCAL) and checks that each launches its own kernel: the grids
// differ as their block sizes do. Against the fake driver, which both libraries share.
#include "fake_cuda.h"

#include <cstdio>
#include <dlfcn.h>

using Launch = CUresult (*)(CUdeviceptr, CUdeviceptr, CUdeviceptr, long);

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  fake_cuda_create_context(0);
  unsigned grids[2] = {};
  const void *images[2] = {};
  for (int i = 0; i < 2; ++i) {
    void *lib = dlopen(argv[1 + i], RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      std::printf("dlopen: %s\n", dlerror());
      return 1;
    }
    auto launch = reinterpret_cast<Launch>(dlsym(lib, "lib_launch"));
    if (!launch || launch(0x1000, 0x1000, 0x1000, 4096) != CUDA_SUCCESS) {
      std::printf("launch from %s failed\n", argv[1 + i]);
      return 1;
    }
    grids[i] = fake_cuda_last_launch().grid[0];
    images[i] = fake_cuda_last_launch().image;
  }
  std::printf("grids: %u %u, modules %d, images %s\n", grids[0], grids[1], fake_cuda_total_loads(),
              images[0] != images[1] ? "differ" : "SAME");
  return 0;
}
