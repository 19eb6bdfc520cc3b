// tests/gpu/kernels/layouts.tile: every fragment layout kind (row groups with idle lanes, flat
// 3-D, replicated local array, group-replicated reduction results) at ragged sizes, against a
// float64 CPU reference with poisoned outputs.
#include "gpu_common.h"
#include "layouts.h"
#include "wide_reduce.h"

using namespace gputest;

int main() {
  init();
  std::mt19937 rng = freshRng();
  int failures = 0;
  for (int64_t M : {int64_t{1}, int64_t{2}, int64_t{1000}, int64_t{4097}}) {
    std::vector<float> x = randomFloats(M * 100, rng, 2.f);
    std::vector<uint16_t> v = randomHalves(M * 36, rng, 2.f);
    DeviceBuffer dx = upload(x), dv = upload(v), dy = poisoned(M * 4 + 64),
                 dz = poisoned(x.size() * 4 + 64);
    CK(tile::layouts::layouts(nullptr, dx, dv, dy, dz, M));
    CK(cuCtxSynchronize());
    std::vector<float> y = download<float>(dy, M + 16), z = download<float>(dz, x.size() + 16);
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
  }
  // Cross-warp row reductions (row groups of 128 threads).
  for (int64_t M : {int64_t{1}, int64_t{7}, int64_t{3001}}) {
    const int64_t C = 2048;
    std::vector<float> x = randomFloats(M * C, rng, 2.f);
    DeviceBuffer dx = upload(x), ds = poisoned(M * 4 + 64), dz = poisoned(x.size() * 4 + 64);
    CK(tile::wide_reduce::wide_reduce(nullptr, dx, ds, dz, M));
    CK(cuCtxSynchronize());
    std::vector<float> sv = download<float>(ds, M), z = download<float>(dz, x.size());
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
  }
  return verdict("layouts", failures);
}
