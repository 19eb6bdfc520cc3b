// Per-context module state against the fake driver: two threads, each with its own context on
// its own device, launch concurrently; every launch must use the function loaded into its own
// context, each context loads the module once, and unload() unloads from every context (one
// destroyed meanwhile is skipped). tests/gpu/two_gpus_gpu.cpp does the same on two real GPUs.
#include "vector_add.h"

#include "expect.h"
#include "fake_cuda.h"

#include <cstdio>
#include <thread>
#include <vector>

namespace va = tile::vector_add;

int main() {
  constexpr int kLaunches = 20000;
  CUcontext contexts[2] = {};
  int failures[2] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      contexts[t] = fake_cuda_create_context(t);
      for (int i = 0; i < kLaunches; ++i) {
        CUdeviceptr p = 0x100000 * (t + 1);
        if (va::vector_add(nullptr, p, p, p, 1 + i) != CUDA_SUCCESS)
          ++failures[t];
      }
    });
  for (std::thread &t : threads)
    t.join();
  EXPECT(failures[0] == 0 && failures[1] == 0);
  EXPECT(fake_cuda_wrong_context_launches() == 0);
  EXPECT(fake_cuda_launches(contexts[0]) == kLaunches);
  EXPECT(fake_cuda_launches(contexts[1]) == kLaunches);
  EXPECT(fake_cuda_live_modules(contexts[0]) == 1 && fake_cuda_live_modules(contexts[1]) == 1);
  EXPECT(fake_cuda_total_loads() == 2);

  // A third context that is destroyed before unload(): unload skips it.
  std::thread([&] {
    fake_cuda_create_context(0);
    CUdeviceptr p = 0x400000;
    if (va::vector_add(nullptr, p, p, p, 10) != CUDA_SUCCESS)
      ++failures[0];
    CUcontext ctx = nullptr;
    cuCtxGetCurrent(&ctx);
    fake_cuda_destroy_context(ctx);
  }).join();
  EXPECT(failures[0] == 0 && fake_cuda_total_loads() == 3);

  // The main thread has no current context: launches fail cleanly, and unload() still reaches
  // every context.
  fake_cuda_set_current(nullptr);
  EXPECT(va::vector_add(nullptr, 0x1000, 0x1000, 0x1000, 4) == CUDA_ERROR_INVALID_CONTEXT);
  va::unload();
  EXPECT(fake_cuda_live_modules(contexts[0]) == 0 && fake_cuda_live_modules(contexts[1]) == 0);

  // After unload, a launch loads again into its context.
  fake_cuda_set_current(contexts[1]);
  EXPECT(va::vector_add(nullptr, 0x1000, 0x1000, 0x1000, 4) == CUDA_SUCCESS);
  EXPECT(fake_cuda_live_modules(contexts[1]) == 1 && fake_cuda_total_loads() == 4);
  EXPECT(fake_cuda_wrong_context_launches() == 0);
  std::printf("contexts: ok\n");
  return 0;
}
