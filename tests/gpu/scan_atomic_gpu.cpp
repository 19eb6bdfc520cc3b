// cumsum (fragments and shared buffers, both dimensions, reversed, fp32 -> fp16) and atomic_add
// (a reduced fragment region, one element per block) from tests/gpu/kernels/scan_atomic.tile,
// against float64 references on fresh random data with poisoned outputs, at ragged row counts.
#include "gpu_common.h"
#include "scan_atomic.h"

#include <random>

using namespace gputest;

namespace {

CUdeviceptr upload(const std::vector<float> &v) {
  CUdeviceptr p;
  CK(cuMemAlloc(&p, v.size() * 4));
  CK(cuMemcpyHtoD(p, v.data(), v.size() * 4));
  return p;
}

std::vector<float> download(CUdeviceptr p, size_t n) {
  std::vector<float> v(n);
  CK(cuMemcpyDtoH(v.data(), p, n * 4));
  return v;
}

int runScans(std::mt19937 &rng, int64_t M) {
  const int64_t N = 100;
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(M * N);
  for (float &v : x)
    v = dist(rng);
  CUdeviceptr dx = upload(x), dy, dz, dw;
  CK(cuMemAlloc(&dy, M * N * 4));
  CK(cuMemAlloc(&dz, M * N * 4));
  CK(cuMemAlloc(&dw, M * N * 2));
  CK(cuMemsetD32(dy, 0x7fc00000u, M * N));
  CK(cuMemsetD32(dz, 0x7fc00000u, M * N));
  CK(cuMemsetD16(dw, 0x7e00u, M * N));
  CK(tile::scan_atomic::scans(nullptr, dx, dy, dz, dw, M));
  CK(cuCtxSynchronize());
  std::vector<float> y = download(dy, M * N), z = download(dz, M * N);
  std::vector<uint16_t> wh(M * N);
  CK(cuMemcpyDtoH(wh.data(), dw, M * N * 2));
  std::vector<float> w(M * N);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = fromHalf(wh[i]);
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
  for (CUdeviceptr p : {dx, dy, dz, dw})
    CK(cuMemFree(p));
  return ok ? 0 : 1;
}

int runAtomics(std::mt19937 &rng, int64_t M) {
  const int64_t N = 64;
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> x(M * N);
  for (float &v : x)
    v = dist(rng);
  CUdeviceptr dx = upload(x), dcol = upload(std::vector<float>(N, 0.f)),
              dblocks = upload(std::vector<float>(1, 0.f));
  CK(tile::scan_atomic::atomics(nullptr, dx, dcol, dblocks, M));
  CK(cuCtxSynchronize());
  std::vector<float> col = download(dcol, N), blocks = download(dblocks, 1);
  std::vector<double> ref(N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      ref[j] += x[i * N + j];
  ErrorStats e = relError(col, ref);
  double expectBlocks = static_cast<double>((M + 15) / 16);
  bool ok = e.nan == 0 && e.rel < 1e-5 && blocks[0] == expectBlocks;
  std::printf("atomic  M=%-5lld column sums rel.err %.2e, block count %.0f (expected %.0f): %s\n",
              (long long)M, e.rel, blocks[0], expectBlocks, ok ? "ok" : "FAIL");
  for (CUdeviceptr p : {dx, dcol, dblocks})
    CK(cuMemFree(p));
  return ok ? 0 : 1;
}

} // namespace

int main() {
  init();
  std::mt19937 rng(std::random_device{}());
  int failures = 0;
  for (int64_t M : {1, 7, 1001, 4099})
    failures += runScans(rng, M);
  for (int64_t M : {1, 17, 1000, 65537})
    failures += runAtomics(rng, M);
  std::printf("scan_atomic: %s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
