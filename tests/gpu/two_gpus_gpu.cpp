// One process, two GPUs, two threads: each thread makes its device's primary context current
// and launches many kernels from the same generated headers concurrently on its own stream;
// every result is checked. The header loads its module into each context on first use there
// and launches each context's own functions (before per-context state, the second device ran
// the first device's functions). Skips, passing, when fewer than two devices are present.
#include "gpu_common.h"
#include "vector_add.h"

#include <atomic>
#include <cstring>
#include <thread>

using namespace gputest;

namespace {

/// One device's share of the work: returns the number of wrong results.
int drive(int ordinal, int rounds) {
  CUdevice dev;
  CK(cuDeviceGet(&dev, ordinal));
  CUcontext ctx;
  CK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(cuCtxSetCurrent(ctx));
  CUstream stream;
  CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  std::mt19937 rng(1234 + ordinal);
  std::uniform_real_distribution<float> dist(-100.f, 100.f);
  int bad = 0;
  for (int round = 0; round < rounds; ++round) {
    int64_t n = 1 + static_cast<int64_t>(rng() % (1 << 20));
    std::vector<float> a(n), b(n);
    for (int64_t i = 0; i < n; ++i)
      a[i] = dist(rng), b[i] = dist(rng);
    DeviceBuffer da = upload(a), db = upload(b), dc = poisoned(n * sizeof(float));
    // Several launches in flight on the stream before one synchronization.
    for (int k = 0; k < 4; ++k)
      CK(tile::vector_add::vector_add(stream, da, db, dc, n));
    CK(cuStreamSynchronize(stream));
    std::vector<float> c = download<float>(dc, n);
    for (int64_t i = 0; i < n; ++i) {
      float want = a[i] + b[i];
      if (std::memcmp(&want, &c[i], sizeof want) != 0) {
        if (bad < 3)
          std::printf("  device %d round %d: mismatch at %lld\n", ordinal, round,
                      static_cast<long long>(i));
        ++bad;
        break;
      }
    }
  }
  std::printf("device %d: %d rounds, image %s, %s\n", ordinal, rounds,
              tile::vector_add::loaded_image() ? tile::vector_add::loaded_image() : "(none)",
              bad ? "WRONG" : "ok");
  CK(cuStreamDestroy(stream));
  return bad;
}

} // namespace

int main() {
  CK(cuInit(0));
  int count = 0;
  CK(cuDeviceGetCount(&count));
  if (count < 2) {
    std::printf("SKIP: two_gpus needs two devices, found %d (run on the nvidia-h200-x2 "
                "machine)\n",
                count);
    return 0;
  }
  std::atomic<int> failures{0};
  std::thread t0([&] { failures += drive(0, 200); });
  std::thread t1([&] { failures += drive(1, 200); });
  t0.join();
  t1.join();
  // unload() reaches both contexts; launching again afterwards loads again.
  tile::vector_add::unload();
  failures += drive(1, 3);
  failures += drive(0, 3);
  tile::vector_add::unload();
  std::printf("RESULT two_gpus: %s\n", failures ? "FAIL" : "PASS");
  return failures ? 1 : 0;
}
