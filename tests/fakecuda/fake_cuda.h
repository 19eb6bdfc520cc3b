// Control of the fake CUDA driver (fake_cuda.cpp) for CPU tests of generated headers: devices
// with a compute capability, contexts, and a record of what was loaded and launched where.
#ifndef TILEC_FAKE_CUDA_CONTROL_H
#define TILEC_FAKE_CUDA_CONTROL_H

#include "cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Sets device `device`'s compute capability (every device starts as 9.0; every device has 132
/// multiprocessors).
void fake_cuda_set_capability(int device, int major, int minor);
/// Creates a context on `device` and makes it current on the calling thread.
CUcontext fake_cuda_create_context(int device);
/// Destroys a context: its modules go with it; the calling thread has no current context after.
void fake_cuda_destroy_context(CUcontext ctx);
/// Makes `ctx` current on the calling thread (NULL: none).
void fake_cuda_set_current(CUcontext ctx);

/// Modules loaded into `ctx` and not unloaded.
int fake_cuda_live_modules(CUcontext ctx);
/// cuModuleLoadData calls that succeeded, in every context.
int fake_cuda_total_loads(void);
/// Launches made in `ctx` so far.
long fake_cuda_launches(CUcontext ctx);
/// Launches of a function from another context than the current one (the driver would reject
/// or misbehave): must stay 0.
long fake_cuda_wrong_context_launches(void);

/// The last launch on the calling thread.
struct fake_cuda_launch {
  const char *kernel;
  const void *image; // what the function's module was loaded from
  unsigned grid[3], block, shared;
  int programmatic; // launched with programmatic stream serialization (cuLaunchKernelEx)
};
/// Calls `hook` with the kernel parameters during each launch (they live only that long).
void fake_cuda_on_launch(void (*hook)(void **args));
struct fake_cuda_launch fake_cuda_last_launch(void);

#ifdef __cplusplus
}
#endif

#endif // TILEC_FAKE_CUDA_CONTROL_H
