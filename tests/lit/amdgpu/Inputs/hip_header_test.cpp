// Runs a generated HIP header (softmax for gfx942 and gfx90a) against the fake HIP library:
// which code object each device gets, the launch configuration, and the argument checks.
#include "softmax.h"

#include "fake_hip.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

int failures = 0;

void expect(bool ok, const char *what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}

hipDeviceptr_t pointer(std::uintptr_t address) { return reinterpret_cast<hipDeviceptr_t>(address); }

} // namespace

int main() {
  namespace k = tile::softmax;
  hipDeviceptr_t x = pointer(0x10000), y = pointer(0x20000);

  fake_hip_record_args(3);
  // Device 0 is a gfx942: the first image, loaded once, launched with the kernel's block size.
  expect(k::softmax(nullptr, x, y, 1000) == hipSuccess, "launch on gfx942");
  fake_hip_launch l = fake_hip_last_launch();
  expect(std::strcmp(l.kernel, "softmax") == 0, "kernel name");
  expect(l.grid[0] == 250 && l.grid[1] == 1 && l.grid[2] == 1, "grid = ceildiv(1000, 4)");
  expect(l.block[0] == 128 && l.block[1] == 1 && l.block[2] == 1, "block of 128");
  expect(l.shared == k::softmax_info::dynamic_shared_bytes, "dynamic LDS");
  expect(l.args[0] == 0x10000 && l.args[1] == 0x20000, "arguments X and Y");
  expect(l.args[2] == 1000, "argument M");
  expect(std::strcmp(k::loaded_image(), "gfx942 code object") == 0, "gfx942 image");
  expect(k::softmax(nullptr, x, y, 8) == hipSuccess && fake_hip_total_loads() == 1,
         "second launch reuses the module");

  // Device 1 is a gfx90a: its own module, from the second image.
  fake_hip_set_arch(1, "gfx90a:sramecc+:xnack-");
  expect(hipSetDevice(1) == hipSuccess, "hipSetDevice");
  expect(k::softmax(nullptr, x, y, 4) == hipSuccess, "launch on gfx90a");
  expect(fake_hip_last_launch().device == 1 && fake_hip_total_loads() == 2, "loaded on device 1");
  expect(std::strcmp(k::loaded_image(), "gfx90a code object") == 0, "gfx90a image");

  // Device 2 has an architecture the header has no code object for.
  fake_hip_set_arch(2, "gfx1100");
  expect(hipSetDevice(2) == hipSuccess, "hipSetDevice");
  expect(k::softmax(nullptr, x, y, 4) == hipErrorNoBinaryForGpu, "no code object for gfx1100");
  expect(std::strstr(k::last_error(), "no embedded code object") != nullptr, "says why");
  expect(k::loaded_image() == nullptr, "nothing loaded on device 2");
  expect(hipSetDevice(0) == hipSuccess, "hipSetDevice");

  // Argument checks, before any HIP call.
  long launches = fake_hip_launches();
  expect(k::softmax(nullptr, nullptr, y, 4) == hipErrorInvalidValue, "null tensor");
  std::printf("%s\n", k::last_error());
  expect(k::softmax(nullptr, pointer(0x10002), y, 4) == hipErrorInvalidValue, "misaligned");
  std::printf("%s\n", k::last_error());
  expect(k::softmax(nullptr, x, y, 0) == hipErrorInvalidValue, "M = 0");
  std::printf("%s\n", k::last_error());
  // 2^31 - 1 rows: 2^29 blocks of 128 work-items, past HSA's 32-bit grid size.
  expect(k::softmax(nullptr, x, y, 2147483647) == hipErrorInvalidValue, "grid too large");
  std::printf("%s\n", k::last_error());
  expect(fake_hip_launches() == launches, "no launch after a rejected argument");

  // unload() unloads on every device and restores the current one.
  k::unload();
  int device = -1;
  expect(hipGetDevice(&device) == hipSuccess, "hipGetDevice");
  expect(fake_hip_live_modules() == 0 && device == 0, "unloaded everywhere");
  expect(k::softmax(nullptr, x, y, 4) == hipSuccess && fake_hip_total_loads() == 3,
         "a launch after unload loads again");

  std::printf("%s\n", failures == 0 ? "ALL PASSED" : "SOME FAILED");
  return failures == 0 ? 0 : 1;
}
