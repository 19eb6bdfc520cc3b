// Two shared libraries built around headers of one stem (libs/scale.tile) with different -D
// values (factor=2, block=1024 and factor=3, block=256), loaded into one process with
// dlopen(RTLD_LOCAL): each must launch its own kernel. Before the headers had hidden visibility
// the second library ran the first one's kernel (wrong factor; with other shapes, illegal
// memory accesses). The libraries are in ../lib next to this program (scripts/gpu-test.sh).
#include "gpu_common.h"

#include <dlfcn.h>
#include <string>
#include <unistd.h>

using namespace gputest;

int main() {
  init();
  char exe[4096] = {};
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  std::string dir = std::string(exe, len > 0 ? len : 0);
  dir = dir.substr(0, dir.rfind('/')) + "/../lib/";
  using Launch = CUresult (*)(CUdeviceptr, CUdeviceptr, int64_t);
  using Factor = int (*)();
  int failures = 0;
  const int64_t n = (int64_t{1} << 20) + 77;
  std::mt19937 rng = freshRng();
  std::vector<float> x = randomFloats(n, rng);
  DeviceBuffer dx = upload(x);
  for (const char *name : {"libscale_a.so", "libscale_b.so", "libscale_a.so"}) {
    void *lib = dlopen((dir + name).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      std::printf("FAIL: dlopen %s: %s\n", name, dlerror());
      return 1;
    }
    auto launch = reinterpret_cast<Launch>(dlsym(lib, "scale_launch"));
    auto factor = reinterpret_cast<Factor>(dlsym(lib, "scale_factor"));
    if (!launch || !factor) {
      std::printf("FAIL: %s lacks its entry points\n", name);
      return 1;
    }
    DeviceBuffer dy = poisoned(n * sizeof(float));
    CK(launch(dx, dy, n));
    CK(cuCtxSynchronize());
    std::vector<float> y = download<float>(dy, n);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      float want = x[i] * static_cast<float>(factor());
      if (std::memcmp(&want, &y[i], sizeof want) != 0)
        ++bad;
    }
    std::printf("%s: factor %d, %lld wrong of %lld\n", name, factor(), static_cast<long long>(bad),
                static_cast<long long>(n));
    failures += bad != 0;
  }
  std::printf("RESULT two_libraries: %s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
