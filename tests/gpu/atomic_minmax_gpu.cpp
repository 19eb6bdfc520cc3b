// atomic_max / atomic_min of tests/gpu/kernels/atomic_minmax.tile: column maxima and minima of
// an M x N matrix, one atomic per Parallel iteration, into float32 and int32 vectors that
// start at the identity (-inf/+inf, INT_MIN/INT_MAX), and the element form once per block.
// Max and min are exact, so the results must equal the CPU's bit for bit; fresh random inputs
// (both signs) each run, ragged shapes, poisoned bytes behind every output.
#include "atomic_minmax.h"
#include "gpu_common.h"

#include <climits>
#include <cstring>

using namespace gputest;

namespace {

template <class T> DeviceBuffer filled(size_t n, T value) {
  std::vector<T> v(n, value);
  DeviceBuffer d = poisoned(n * sizeof(T) + kSlackBytes);
  CK(cuMemcpyHtoD(d, v.data(), n * sizeof(T)));
  return d;
}

template <class T>
int compare(const char *what, CUdeviceptr d, const std::vector<T> &want, int64_t M, int64_t N) {
  std::vector<T> got = download<T>(d, want.size());
  size_t wrong = 0;
  for (size_t j = 0; j < want.size(); ++j)
    wrong += std::memcmp(&got[j], &want[j], sizeof(T)) != 0;
  bool tail = tailIntact(d, want.size() * sizeof(T));
  bool ok = wrong == 0 && tail;
  std::printf("%-7s M=%-5lld N=%-5lld wrong %zu of %zu%s %s\n", what, (long long)M, (long long)N,
              wrong, want.size(), tail ? "" : " (wrote past the end)", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}

int runShape(std::mt19937 &rng, int64_t M, int64_t N) {
  std::vector<float> x = randomFloats(M * N, rng, 100.f);
  std::uniform_int_distribution<int32_t> ints(-1000000, 1000000);
  std::vector<int32_t> xi(M * N);
  for (int32_t &v : xi)
    v = ints(rng);
  std::vector<float> cmax(N, -INFINITY), cmin(N, INFINITY);
  std::vector<int32_t> imax(N, INT_MIN), imin(N, INT_MAX);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      cmax[j] = std::max(cmax[j], x[i * N + j]);
      cmin[j] = std::min(cmin[j], x[i * N + j]);
      imax[j] = std::max(imax[j], xi[i * N + j]);
      imin[j] = std::min(imin[j], xi[i * N + j]);
    }
  int64_t bx = (N + 63) / 64, by = (M + 31) / 32;
  std::vector<int32_t> blocks = {static_cast<int32_t>((by - 1) * 1000 + bx - 1), 0};

  DeviceBuffer dx = upload(x), dxi = upload(xi);
  DeviceBuffer dmax = filled<float>(N, -INFINITY), dmin = filled<float>(N, INFINITY);
  DeviceBuffer dimax = filled<int32_t>(N, INT_MIN), dimin = filled<int32_t>(N, INT_MAX);
  std::vector<int32_t> blocksInit = {INT_MIN, INT_MAX};
  DeviceBuffer dblocks = poisoned(2 * sizeof(int32_t) + kSlackBytes);
  CK(cuMemcpyHtoD(dblocks, blocksInit.data(), 2 * sizeof(int32_t)));
  CK(tile::atomic_minmax::col_extrema(nullptr, dx, dxi, dmax, dmin, dimax, dimin, dblocks, M, N));
  CK(cuCtxSynchronize());
  int failures = 0;
  failures += compare("colmax", dmax, cmax, M, N);
  failures += compare("colmin", dmin, cmin, M, N);
  failures += compare("imax", dimax, imax, M, N);
  failures += compare("imin", dimin, imin, M, N);
  failures += compare("blocks", dblocks, blocks, M, N);
  return failures;
}

} // namespace

int main() {
  init();
  CK(tile::atomic_minmax::load());
  std::mt19937 rng = freshRng();
  int failures = 0;
  struct Shape {
    int64_t M, N;
  };
  // Ragged rows and columns, a single element, and whole tiles.
  for (Shape s : {Shape{1000, 130}, Shape{1, 1}, Shape{77, 300}, Shape{256, 128}})
    failures += runShape(rng, s.M, s.N);
  return verdict("atomic_minmax", failures);
}
