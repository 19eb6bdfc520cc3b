// Control of the fake HIP library (fake_hip.cpp) for CPU tests of generated HIP headers. The
// headers compile against Debian's real HIP headers (libamdhip64-dev); only the few module API
// functions they call are faked, so their logic can be checked without an AMD GPU.
#ifndef TILEC_FAKE_HIP_CONTROL_H
#define TILEC_FAKE_HIP_CONTROL_H

#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_NVIDIA__)
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

/// Sets device `device`'s gcnArchName (every device starts as "gfx942:sramecc+:xnack-").
void fake_hip_set_arch(int device, const char *arch);
/// hipModuleLoadData calls that succeeded, and modules loaded and not unloaded.
int fake_hip_total_loads();
int fake_hip_live_modules();

/// The last launch.
struct fake_hip_launch {
  const char *kernel;
  const void *image; // what the function's module was loaded from
  int device;        // the device current at the launch
  unsigned grid[3], block[3], shared;
  /// The first bytes of the first fake_hip_record_args() kernel arguments, 8 of each (the
  /// argument array lives only during the launch).
  unsigned long long args[8];
};
/// How many kernel arguments (each at least 8 bytes) each launch records.
void fake_hip_record_args(int count);
fake_hip_launch fake_hip_last_launch();
long fake_hip_launches();

#endif // TILEC_FAKE_HIP_CONTROL_H
