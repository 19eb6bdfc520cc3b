// cumsum (fragments and shared buffers, both dimensions, reversed, fp32 -> fp16) and atomic_add
// (a reduced fragment region, one element per block) from tests/gpu/kernels/scan_atomic.tile,
// against float64 references on fresh random data with poisoned outputs, at ragged row counts.
#include "gpu_common.h"
#include "scan_atomic.h"

using namespace gputest;

namespace {

int runScans(std::mt19937 &rng, int64_t M) {
  const int64_t N = 100;
  std::vector<float> x = randomFloats(M * N, rng);
  DeviceBuffer dx = upload(x), dy = nanFloats(M * N), dz = nanFloats(M * N), dw(M * N * 2);
  CK(cuMemsetD16(dw, 0x7e00u, M * N)); // float16 NaN
  CK(tile::scan_atomic::scans(nullptr, dx, dy, dz, dw, M));
  CK(cuCtxSynchronize());
  std::vector<float> y = download<float>(dy, M * N), z = download<float>(dz, M * N);
  std::vector<float> w = halvesToFloats(download<uint16_t>(dw, M * N));
  std::vector<double> ry(M * N), rz(M * N), rw(M * N);
  for (int64_t i = 0; i < M; ++i) {
    double run = 0;
    for (int64_t j = 0; j < N; ++j)
      ry[i * N + j] = run += x[i * N + j];
    run = 0;
    for (int64_t j = N - 1; j >= 0; --j)
      rz[i * N + j] = run += x[i * N + j];
    for (int64_t j = 0; j < N; ++j) {
      double col = 0;
      for (int64_t r = i / 4 * 4; r <= i; ++r)
        col += x[r * N + j];
      rw[i * N + j] = col;
    }
  }
  ErrorStats ey = relError(y, ry), ez = relError(z, rz), ew = relError(w, rw);
  bool ok = ey.nan + ez.nan + ew.nan == 0 && ey.rel < 1e-6 && ez.rel < 1e-6 && ew.rel < 1e-3;
  std::printf("cumsum  M=%-5lld rows %.2e, reversed rows (shared) %.2e, columns -> fp16 %.2e, "
              "unwritten %lld: %s\n",
              (long long)M, ey.rel, ez.rel, ew.rel, ey.nan + ez.nan + ew.nan, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

int runAtomics(std::mt19937 &rng, int64_t M) {
  const int64_t N = 64;
  std::vector<float> x = randomFloats(M * N, rng);
  DeviceBuffer dx = upload(x), dcol = upload(std::vector<float>(N, 0.f)),
               dblocks = upload(std::vector<float>(1, 0.f));
  CK(tile::scan_atomic::atomics(nullptr, dx, dcol, dblocks, M));
  CK(cuCtxSynchronize());
  std::vector<float> col = download<float>(dcol, N), blocks = download<float>(dblocks, 1);
  std::vector<double> ref(N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      ref[j] += x[i * N + j];
  ErrorStats e = relError(col, ref);
  double expectBlocks = static_cast<double>((M + 15) / 16);
  bool ok = e.nan == 0 && e.rel < 1e-5 && blocks[0] == expectBlocks;
  std::printf("atomic  M=%-5lld column sums rel.err %.2e, block count %.0f (expected %.0f): %s\n",
              (long long)M, e.rel, blocks[0], expectBlocks, ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

} // namespace

int main() {
  init();
  std::mt19937 rng = freshRng();
  int failures = 0;
  for (int64_t M : {1, 7, 1001, 4099})
    failures += runScans(rng, M);
  for (int64_t M : {1, 17, 1000, 65537})
    failures += runAtomics(rng, M);
  return verdict("scan_atomic", failures);
}
