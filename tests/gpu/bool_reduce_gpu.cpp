// bool reductions (tests/gpu/kernels/bool_reduce.tile) against the CPU, exactly: per row whether
// any and whether every value is true and how many are, per block whether any row of a column is
// true. Rows all false, all true and mixed with densities from sparse to dense; a row count that
// is not a multiple of the block (the rows past it read as false); poisoned bytes behind every
// output.
#include "bool_reduce.h"
#include "gpu_common.h"

using namespace gputest;

int main() {
  init();
  CK(tile::bool_reduce::load());
  std::mt19937 rng = freshRng();
  const int64_t M = 1000, N = 128, blockM = 64, C = (M + blockM - 1) / blockM;
  std::vector<uint8_t> x(M * N);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int64_t i = 0; i < M; ++i) {
    // Row kinds: all false, all true, or true with a density of 1/128 .. 1.
    int kind = static_cast<int>(i % 4);
    double density = kind == 2 ? 1.0 / 128 : unit(rng);
    for (int64_t j = 0; j < N; ++j)
      x[i * N + j] = kind == 0 ? 0 : kind == 1 ? 1 : unit(rng) < density;
  }
  std::vector<uint8_t> any(M, 0), all(M, 1), colAny(C * N, 0);
  std::vector<int32_t> count(M, 0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      bool v = x[i * N + j] != 0;
      any[i] |= v;
      all[i] &= v;
      count[i] += v;
      colAny[(i / blockM) * N + j] |= v;
    }
  DeviceBuffer dx = upload(x);
  auto out = [](size_t bytes) { return poisoned(bytes + kSlackBytes); };
  DeviceBuffer dany = out(M), dall = out(M), dcount = out(M * 4), dcol = out(C * N);
  CK(tile::bool_reduce::bool_reduce(nullptr, dx, dany, dall, dcount, dcol, M, C));
  CK(cuCtxSynchronize());
  int failures = 0;
  failures += compareExact("any", dany, any);
  failures += compareExact("all", dall, all);
  failures += compareExact("count", dcount, count);
  failures += compareExact("colany", dcol, colAny);
  return verdict("bool_reduce", failures);
}
