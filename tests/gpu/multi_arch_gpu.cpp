// Several arches in one header, on the GPU: vector_add built with --arch sm_80,sm_90a must load
// its sm_90a cubin on an sm_90 device; built with --arch sm_80+ptx it must run there through the
// sm_80 PTX; built with --arch sm_80 alone it must fail with CUDA_ERROR_NO_BINARY_FOR_GPU and
// say so in last_error(). Results are checked against the CPU.
#include "gpu_common.h"
#include "multi/both/vector_add.h"
#include "multi/fwd/vector_add.h"
#include "multi/only80/vector_add.h"

#include <string>

using namespace gputest;

namespace {

template <class Launch> int check(const char *what, Launch launch, const char *(*image)()) {
  const int64_t n = 3 * 1024 * 1024 + 5;
  std::mt19937 rng = freshRng();
  std::vector<float> a = randomFloats(n, rng), b = randomFloats(n, rng);
  DeviceBuffer da = upload(a), db = upload(b), dc = poisoned(n * sizeof(float));
  CK(launch(da, db, dc, n));
  CK(cuCtxSynchronize());
  std::vector<float> c = download<float>(dc, n);
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    float want = a[i] + b[i];
    bad += std::memcmp(&want, &c[i], sizeof want) != 0;
  }
  std::printf("%s: image %s, %lld wrong\n", what, image() ? image() : "(none)",
              static_cast<long long>(bad));
  return bad != 0;
}

} // namespace

int main() {
  init();
  CUdevice dev;
  CK(cuCtxGetDevice(&dev));
  int major = 0, minor = 0;
  CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  std::printf("compute capability %d.%d\n", major, minor);
  int failures = 0;
  failures += check(
      "sm_80,sm_90a",
      [](CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int64_t n) {
        return tile::multi::both::vector_add(nullptr, a, b, c, n);
      },
      tile::multi::both::loaded_image);
  failures += check(
      "sm_80+ptx",
      [](CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int64_t n) {
        return tile::multi::fwd::vector_add(nullptr, a, b, c, n);
      },
      tile::multi::fwd::loaded_image);
  if (major == 9 && minor == 0) {
    failures += std::string(tile::multi::both::loaded_image()) != "sm_90a cubin";
    failures += std::string(tile::multi::fwd::loaded_image()) != "sm_80 PTX";
  }
  // sm_80 machine code alone does not run on a later major version.
  if (major > 8) {
    DeviceBuffer d = poisoned(1024);
    CUresult r = tile::multi::only80::vector_add(nullptr, d, d, d, 16);
    std::printf("sm_80 only: %d, %s\n", static_cast<int>(r), tile::multi::only80::last_error());
    failures += r != CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  std::printf("RESULT multi_arch: %s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
