// Each thread-level primitive of tests/gpu/kernels/thread_ops.tile against the host's
// prediction, bit for bit: thread_id/lane_id/warp_id (and get_thread_binding(0)), shfl_xor,
// shfl_down, shfl_up and shfl_idx with constant and run-time lane arguments (a lane outside the
// warp keeps the thread's own value), on int32 and float32, and a shared buffer written and read
// by element across sync_threads(). Fresh random inputs each run, outputs poisoned first.
#include "gpu_common.h"
#include "thread_ops.h"

#include <cstring>

using namespace gputest;

namespace {

// The value lane `src` of the warp holds, or the thread's own when `src` leaves the warp.
template <class T> T fromLane(const std::vector<T> &v, int64_t row, int t, int src) {
  int warpBase = t / 32 * 32;
  if (src < 0 || src > 31)
    src = t % 32;
  return v[row * 128 + warpBase + src];
}

} // namespace

int main() {
  init();
  CK(tile::thread_ops::load());
  std::mt19937 rng = freshRng();
  const int64_t B = 5;
  std::uniform_int_distribution<int32_t> ints(-1000000, 1000000);
  std::vector<int32_t> x(B * 128);
  for (int32_t &v : x)
    v = ints(rng);
  std::vector<float> f = randomFloats(B * 128, rng, 3.f);
  std::vector<int32_t> want(B * 8 * 128);
  std::vector<float> fwant(B * 3 * 128);
  for (int64_t b = 0; b < B; ++b)
    for (int t = 0; t < 128; ++t) {
      int lane = t % 32;
      auto out = [&](int k) -> int32_t & { return want[(b * 8 + k) * 128 + t]; };
      auto fout = [&](int k) -> float & { return fwant[(b * 3 + k) * 128 + t]; };
      out(0) = t;
      out(1) = lane;
      out(2) = t / 32;
      out(3) = fromLane(x, b, t, lane ^ 5);
      out(4) = fromLane(x, b, t, lane + 3);
      out(5) = fromLane(x, b, t, lane - 7);
      out(6) = fromLane(x, b, t, (lane * 7) % 32);
      out(7) = x[b * 128 + 127 - t];
      fout(0) = fromLane(f, b, t, lane ^ (lane % 8));
      fout(1) = fromLane(f, b, t, lane - 1);
      fout(2) = fromLane(f, b, t, 31 - lane);
    }
  DeviceBuffer dx = upload(x), df = upload(f);
  DeviceBuffer dout = poisoned(want.size() * sizeof(int32_t) + kSlackBytes);
  DeviceBuffer dfout = poisoned(fwant.size() * sizeof(float) + kSlackBytes);
  CK(tile::thread_ops::thread_ops(nullptr, dx, df, dout, dfout, B));
  CK(cuCtxSynchronize());
  std::vector<int32_t> got = download<int32_t>(dout, want.size());
  std::vector<float> fgot = download<float>(dfout, fwant.size());
  static const char *names[] = {"thread_id",   "lane_id",   "warp_id",  "shfl_xor 5",
                                "shfl_down 3", "shfl_up 7", "shfl_idx", "shared by index"};
  int failures = 0;
  for (int k = 0; k < 8; ++k) {
    size_t wrong = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int t = 0; t < 128; ++t) {
        size_t i = (b * 8 + k) * 128 + t;
        wrong += got[i] != want[i];
      }
    std::printf("%-16s int32   wrong %zu of %lld %s\n", names[k], wrong, (long long)(B * 128),
                wrong ? "FAIL" : "PASS");
    failures += wrong != 0;
  }
  static const char *fnames[] = {"shfl_xor lane%8", "shfl_up 1", "shfl_sync 31-l"};
  for (int k = 0; k < 3; ++k) {
    size_t wrong = 0;
    for (int64_t b = 0; b < B; ++b)
      for (int t = 0; t < 128; ++t) {
        size_t i = (b * 3 + k) * 128 + t;
        wrong += std::memcmp(&fgot[i], &fwant[i], sizeof(float)) != 0;
      }
    std::printf("%-16s float32 wrong %zu of %lld %s\n", fnames[k], wrong, (long long)(B * 128),
                wrong ? "FAIL" : "PASS");
    failures += wrong != 0;
  }
  bool tails = tailIntact(dout, want.size() * sizeof(int32_t)) &&
               tailIntact(dfout, fwant.size() * sizeof(float));
  if (!tails)
    std::printf("wrote past the end FAIL\n");
  failures += !tails;
  return verdict("thread_ops", failures);
}
