// Element atomics outside Parallel (tests/gpu/kernels/thread_atomics.tile): a histogram of
// X % 16 whose index and guard differ by thread (each thread adds its own), a block counter
// with nothing thread-dependent (once per block), a counter per lane (each thread), and a
// maximum inside a loop over warp_id() (each warp). Counters start at zero; fresh random inputs
// of a ragged length each run.
#include "gpu_common.h"
#include "thread_atomics.h"

using namespace gputest;

int main() {
  init();
  std::mt19937 rng = freshRng();
  int failures = 0;
  for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{100003}}) {
    std::uniform_int_distribution<int32_t> values(0, 1 << 20);
    std::vector<int32_t> x(static_cast<size_t>(n));
    for (int32_t &v : x)
      v = values(rng);
    const int64_t blocks = (n + 127) / 128;
    std::vector<int32_t> h(16, 0), lanes(32, 0);
    for (int32_t v : x)
      ++h[v % 16];
    for (int32_t &l : lanes)
      l = static_cast<int32_t>(4 * blocks);
    DeviceBuffer dx = upload(x), dh = upload(std::vector<int32_t>(16, 0)),
                 db = upload(std::vector<int32_t>(1, 0)), dl = upload(std::vector<int32_t>(32, 0)),
                 dm = upload(std::vector<int32_t>(1, -1));
    CK(tile::thread_atomics::thread_atomics(nullptr, dx, dh, db, dl, dm, n));
    CK(cuCtxSynchronize());
    bool ok = download<int32_t>(dh, 16) == h && download<int32_t>(db, 1)[0] == blocks &&
              download<int32_t>(dl, 32) == lanes &&
              download<int32_t>(dm, 1)[0] == static_cast<int32_t>(4 * blocks - 1);
    std::printf("thread_atomics N=%-7lld blocks=%-5lld %s\n", static_cast<long long>(n),
                static_cast<long long>(blocks), ok ? "ok" : "WRONG");
    failures += ok ? 0 : 1;
  }
  return verdict("thread_atomics", failures);
}
