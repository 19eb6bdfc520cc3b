// vector_add on the GPU through its generated header: exactness at several sizes (fresh random
// inputs, poisoned output, CPU reference), the launch-time argument checks, and bandwidth next
// to a device-to-device copy measured in the same run.
#include "gpu_common.h"
#include "vector_add.h"

#include <cmath>
#include <cstdint>
#include <cstring>

using namespace gputest;

int main() {
  init();
  std::mt19937 rng = freshRng();
  std::uniform_real_distribution<float> dist(-1000.f, 1000.f);
  int failures = 0;

  const int64_t sizes[] = {1, 1000, (int64_t{1} << 20) + 3, int64_t{1} << 26};
  std::printf("%-12s %-8s %12s %12s %12s\n", "N", "exact", "ms", "GB/s", "copy GB/s");
  for (int64_t n : sizes) {
    size_t bytes = static_cast<size_t>(n) * sizeof(float);
    std::vector<float> a(n), b(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = dist(rng);
      b[i] = dist(rng);
    }
    // One extra vector of slack past C so that a stray store past N would be caught below.
    const size_t slack = 64;
    DeviceBuffer da = upload(a), db = upload(b), dc = poisoned(bytes + slack);
    CK(tile::vector_add::vector_add(nullptr, da, db, dc, n));
    CK(cuCtxSynchronize());
    std::vector<float> c = download<float>(dc, n);
    bool tailOk = tailIntact(dc, bytes, slack);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) {
      float want = a[i] + b[i];
      if (std::memcmp(&want, &c[i], sizeof want) != 0) {
        if (bad < 5)
          std::printf("  mismatch at %lld: got %a want %a\n", static_cast<long long>(i), c[i],
                      want);
        ++bad;
      }
    }
    if (!tailOk) {
      std::printf("  store past the end of C at N=%lld\n", static_cast<long long>(n));
      ++bad;
    }
    failures += bad != 0;
    double ms = medianMs([&] { CK(tile::vector_add::vector_add(nullptr, da, db, dc, n)); });
    double gbs = 3.0 * bytes / ms / 1e6;
    // The copy ceiling: a device-to-device copy of the same bytes (read 2N, write 2N floats).
    double copyGbs = copyGBs(2 * bytes);
    std::printf("%-12lld %-8s %12.4f %12.1f %12.1f\n", static_cast<long long>(n),
                bad ? "NO" : "yes", ms, gbs, copyGbs);
    if (n == (int64_t{1} << 26))
      std::printf("RESULT vector_add N=2^26: %.1f GB/s = %.1f%% of d2d copy %.1f GB/s\n", gbs,
                  100.0 * gbs / copyGbs, copyGbs);
  }

  // Launch-time checks return an error and launch nothing.
  DeviceBuffer d(4096);
  struct Case {
    const char *what;
    CUresult got;
  } cases[] = {
      {"null A", tile::vector_add::vector_add(nullptr, 0, d, d, 16)},
      {"null C", tile::vector_add::vector_add(nullptr, d, d, 0, 16)},
      {"N = 0", tile::vector_add::vector_add(nullptr, d, d, d, 0)},
      {"N < 0", tile::vector_add::vector_add(nullptr, d, d, d, -5)},
      {"misaligned B", tile::vector_add::vector_add(nullptr, d, launchPtr(d + 4), d, 16)},
      {"N > 2^31-1", tile::vector_add::vector_add(nullptr, d, d, d, int64_t{1} << 40)},
  };
  for (const Case &c : cases) {
    bool ok = c.got != CUDA_SUCCESS;
    std::printf("argument check %-14s -> %s\n", c.what, ok ? "rejected" : "ACCEPTED (bug)");
    failures += !ok;
  }
  CK(cuCtxSynchronize());
  return verdict("vector_add", failures);
}
