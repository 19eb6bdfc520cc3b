// tests/gpu/kernels/layouts.tile: every fragment layout kind (row groups with idle lanes, flat
// 3-D, replicated local array, group-replicated reduction results) at ragged sizes, against a
// float64 CPU reference with poisoned outputs.
#include "gpu_common.h"
#include "layouts.h"
#include "wide_reduce.h"

#include <random>

using namespace gputest;

int main() {
  init();
  std::random_device rd;
  std::mt19937 rng(rd());
  std::normal_distribution<float> dist(0.f, 2.f);
  int failures = 0;
  for (int64_t M : {int64_t{1}, int64_t{2}, int64_t{1000}, int64_t{4097}}) {
    std::vector<float> x(M * 100);
    std::vector<uint16_t> v(M * 36);
    for (auto &e : x)
      e = dist(rng);
    for (auto &e : v)
      e = toHalf(dist(rng));
    CUdeviceptr dx, dv, dy, dz;
    CK(cuMemAlloc(&dx, x.size() * 4));
    CK(cuMemAlloc(&dv, v.size() * 2));
    CK(cuMemAlloc(&dy, M * 4 + 64));
    CK(cuMemAlloc(&dz, x.size() * 4 + 64));
    CK(cuMemcpyHtoD(dx, x.data(), x.size() * 4));
    CK(cuMemcpyHtoD(dv, v.data(), v.size() * 2));
    CK(cuMemsetD8(dy, 0xFF, M * 4 + 64));
    CK(cuMemsetD8(dz, 0xFF, x.size() * 4 + 64));
    CK(tile::layouts::layouts(nullptr, dx, dv, dy, dz, M));
    CK(cuCtxSynchronize());
    std::vector<float> y(M + 16), z(x.size() + 16);
    CK(cuMemcpyDtoH(y.data(), dy, M * 4 + 64));
    CK(cuMemcpyDtoH(z.data(), dz, x.size() * 4 + 64));
    std::vector<double> refY(M), refZ(x.size());
    for (int64_t r = 0; r < M; ++r) {
      double s = 0, t = -1e300;
      for (int c = 0; c < 100; ++c)
        s += x[r * 100 + c];
      for (int c = 0; c < 36; ++c)
        t = std::max(t, static_cast<double>(fromHalf(v[r * 36 + c])));
      refY[r] = s;
      for (int c = 0; c < 100; ++c)
        refZ[r * 100 + c] = x[r * 100 + c] - s + t + 2.0;
    }
    ErrorStats ey = relError(std::vector<float>(y.begin(), y.begin() + M), refY);
    ErrorStats ez = relError(std::vector<float>(z.begin(), z.begin() + x.size()), refZ);
    bool tailOk = std::isnan(y[M]) && std::isnan(z[x.size()]);
    bool ok = ey.nan == 0 && ez.nan == 0 && ey.rel < 1e-5 && ez.rel < 1e-5 && tailOk;
    failures += !ok;
    std::printf("M=%-6lld Y rel.err %.2e nan %lld, Z rel.err %.2e nan %lld%s: %s\n",
                static_cast<long long>(M), ey.rel, ey.nan, ez.rel, ez.nan,
                tailOk ? "" : " (wrote past end)", ok ? "ok" : "FAIL");
    CK(cuMemFree(dx));
    CK(cuMemFree(dv));
    CK(cuMemFree(dy));
    CK(cuMemFree(dz));
  }
  // Cross-warp row reductions (row groups of 128 threads).
  for (int64_t M : {int64_t{1}, int64_t{7}, int64_t{3001}}) {
    const int64_t C = 2048;
    std::vector<float> x(M * C);
    for (auto &e : x)
      e = dist(rng);
    CUdeviceptr dx, ds, dz;
    CK(cuMemAlloc(&dx, x.size() * 4));
    CK(cuMemAlloc(&ds, M * 4 + 64));
    CK(cuMemAlloc(&dz, x.size() * 4 + 64));
    CK(cuMemcpyHtoD(dx, x.data(), x.size() * 4));
    CK(cuMemsetD8(ds, 0xFF, M * 4 + 64));
    CK(cuMemsetD8(dz, 0xFF, x.size() * 4 + 64));
    CK(tile::wide_reduce::wide_reduce(nullptr, dx, ds, dz, M));
    CK(cuCtxSynchronize());
    std::vector<float> sv(M), z(x.size());
    CK(cuMemcpyDtoH(sv.data(), ds, M * 4));
    CK(cuMemcpyDtoH(z.data(), dz, x.size() * 4));
    std::vector<double> refS(M), refZ(x.size());
    for (int64_t r = 0; r < M; ++r) {
      double sum = 0, mx = 0;
      for (int64_t c = 0; c < C; ++c) {
        sum += x[r * C + c];
        mx = std::max(mx, std::fabs(static_cast<double>(x[r * C + c])));
      }
      refS[r] = sum;
      for (int64_t c = 0; c < C; ++c)
        refZ[r * C + c] = x[r * C + c] / mx;
    }
    ErrorStats es = relError(sv, refS), ez = relError(z, refZ);
    bool ok = es.nan == 0 && ez.nan == 0 && es.rel < 1e-5 && ez.rel < 1e-5;
    failures += !ok;
    std::printf("wide_reduce M=%-5lld S rel.err %.2e, Z rel.err %.2e: %s\n",
                static_cast<long long>(M), es.rel, ez.rel, ok ? "ok" : "FAIL");
    CK(cuMemFree(dx));
    CK(cuMemFree(ds));
    CK(cuMemFree(dz));
  }
  std::printf("layouts: %s\n", failures ? "FAILED" : "all checks passed");
  return failures ? 1 : 0;
}
