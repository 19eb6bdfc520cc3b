// Integer reductions (tests/gpu/kernels/int_reduce.tile) against the CPU, exactly: int32 row
// sums (wrapping as int32 does), maxima, minima and absolute maxima of values of every sign and
// size (INT32_MIN and INT32_MAX included), an int8 row summed in int32, a uint8 row's maximum
// (values above 127 included), and column sums through shared memory added atomically over the
// blocks. A row count that is not a multiple of the block; poisoned bytes behind every output.
#include "gpu_common.h"
#include "int_reduce.h"

#include <climits>
#include <cstring>

using namespace gputest;

namespace {

int32_t wrapAdd(int32_t a, int32_t b) {
  return static_cast<int32_t>(static_cast<uint32_t>(a) + static_cast<uint32_t>(b));
}

} // namespace

int main() {
  init();
  CK(tile::int_reduce::load());
  std::mt19937 rng = freshRng();
  const int64_t M = 1000, N = 128;
  std::vector<int32_t> x(M * N);
  std::vector<int8_t> b(M * N);
  std::vector<uint8_t> u(M * N);
  std::uniform_int_distribution<int32_t> any(INT32_MIN, INT32_MAX), small(-1000, 1000);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < M * N; ++i) {
    // Half the rows small (sums that do not wrap), half of any size; the extremes appear.
    x[i] = (i / N) % 2 ? any(rng) : small(rng);
    b[i] = static_cast<int8_t>(byte(rng) - 128);
    u[i] = static_cast<uint8_t>(byte(rng));
  }
  x[5] = INT32_MIN;
  x[N + 7] = INT32_MAX;
  std::vector<int32_t> sum(M, 0), mx(M, INT32_MIN), mn(M, INT32_MAX), am(M, 0), bs(M, 0), col(N, 0);
  std::vector<uint8_t> um(M, 0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int32_t v = x[i * N + j];
      sum[i] = wrapAdd(sum[i], v);
      mx[i] = std::max(mx[i], v);
      mn[i] = std::min(mn[i], v);
      // |INT32_MIN| wraps to INT32_MIN in int32, as the GPU's abs does.
      am[i] = std::max(am[i], v == INT32_MIN ? INT32_MIN : std::abs(v));
      bs[i] += b[i * N + j];
      um[i] = std::max(um[i], u[i * N + j]);
      col[j] = wrapAdd(col[j], v);
    }
  DeviceBuffer dx = upload(x), db = upload(b), du = upload(u);
  auto out = [](size_t bytes) { return poisoned(bytes + kSlackBytes); };
  DeviceBuffer dsum = out(M * 4), dmx = out(M * 4), dmn = out(M * 4), dam = out(M * 4),
               dbs = out(M * 4), dum = out(M), dcol = out(N * 4);
  CK(cuMemsetD8(dcol, 0, N * 4));
  CK(tile::int_reduce::int_reduce(nullptr, dx, db, du, dsum, dmx, dmn, dam, dbs, dum, dcol, M));
  CK(cuCtxSynchronize());
  int failures = 0;
  failures += compareExact("sum", dsum, sum);
  failures += compareExact("max", dmx, mx);
  failures += compareExact("min", dmn, mn);
  failures += compareExact("absmax", dam, am);
  failures += compareExact("i8sum", dbs, bs);
  failures += compareExact("u8max", dum, um);
  failures += compareExact("colsum", dcol, col);
  return verdict("int_reduce", failures);
}
