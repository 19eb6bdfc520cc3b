// The float32 math functions of tests/gpu/kernels/math_funcs.tile against float64, as built
// and under --fast-math: the largest error of each over fresh random inputs of every magnitude
// (2^-30 to 2^8, both signs), dense sweeps of the ranges where exp and exp2 give subnormal
// results or overflow, and special values (zeros, infinities, NaN, subnormal inputs). Each
// function has the bound docs/language.md states for it; a NaN where the reference is not NaN
// (or the reverse), a wrong infinity or an unwritten output fails whatever the bound.
#include "gpu_common.h"
#include "math_fast/math_funcs.h"
#include "math_funcs.h"

#include <cfloat>
#include <limits>
#include <string>

using namespace gputest;

namespace {

constexpr int kCols = 10;

// One float32 ulp at the magnitude of r (2^-149 in the subnormal range).
double ulpOf(double r) {
  double a = std::fabs(r);
  int e = a < std::ldexp(1.0, -126) ? -126 : std::ilogb(a);
  return std::ldexp(1.0, e - 23);
}

struct Bound {
  const char *name;
  double ulps;   // allowed error in ulps of the reference...
  double perArg; // ...plus this many ulps per unit of |x| (exp's rounded x * log2(e))...
  double absTol; // ...or an absolute error this small
};

double reference(int col, double x) {
  switch (col) {
  case 0:
    return std::exp2(x);
  case 1:
    return std::exp(x);
  case 2:
    return std::log2(x);
  case 3:
    return std::log(x);
  case 4:
    return 1.0 / std::sqrt(x);
  case 5:
    return std::tanh(x);
  case 6:
    return std::erf(x);
  case 7:
  case 8:
    return 1.0 / (1.0 + std::exp(-x));
  // The program's own x * 0.5 - 1.0 is rounded to float32 before exp2 sees it.
  default:
    return std::exp2(static_cast<double>(static_cast<float>(x * 0.5 - 1.0)));
  }
}

std::vector<float> inputs(std::mt19937 &rng) {
  std::vector<float> x;
  std::uniform_real_distribution<double> expo(-30.0, 8.0), unit(0.0, 1.0);
  for (int i = 0; i < 200000; ++i)
    x.push_back(static_cast<float>((unit(rng) < 0.5 ? -1 : 1) * std::exp2(expo(rng))));
  // exp2's subnormal results and overflow, exp's, and column 9's (x/2 - 1 in [-150, -125]).
  auto sweep = [&](double lo, double hi, int n) {
    std::uniform_real_distribution<double> d(lo, hi);
    for (int i = 0; i < n; ++i)
      x.push_back(static_cast<float>(d(rng)));
  };
  sweep(-155.0, -120.0, 40000);
  sweep(120.0, 130.0, 2000);
  sweep(-110.0, -80.0, 40000);
  sweep(85.0, 90.0, 2000);
  sweep(-300.0, -245.0, 20000);
  sweep(-4.0, 4.0, 40000);
  const float inf = std::numeric_limits<float>::infinity();
  for (float s : {0.0f,
                  -0.0f,
                  inf,
                  -inf,
                  std::numeric_limits<float>::quiet_NaN(),
                  1.0f,
                  -1.0f,
                  0.5f,
                  2.0f,
                  FLT_MIN,
                  std::numeric_limits<float>::denorm_min(),
                  1e-40f,
                  FLT_MAX,
                  -FLT_MAX,
                  88.72f,
                  128.0f,
                  127.99f,
                  -126.0f,
                  -149.0f,
                  -150.0f,
                  -252.0f})
    x.push_back(s);
  return x;
}

struct Worst {
  double excess = 0; // error / allowed, the largest
  double err = 0, x = 0, ref = 0, got = 0;
  long bad = 0;
};

int check(const char *build, const std::vector<float> &x, const std::vector<float> &r,
          const Bound (&bounds)[kCols], bool fast) {
  int failures = 0;
  size_t n = x.size();
  for (int c = 0; c < kCols; ++c) {
    Worst w;
    double worstUlps = 0;
    for (size_t i = 0; i < n; ++i) {
      double xi = x[i], want = reference(c, xi);
      double got = r[i * kCols + c];
      float wantF = static_cast<float>(want);
      bool ok;
      double ulps = 0, allowed = 1;
      if (std::isnan(want) || std::isnan(got)) {
        ok = std::isnan(want) && std::isnan(got);
      } else if (std::isinf(wantF) || std::isinf(got)) {
        // At the overflow threshold either side may round to infinity.
        ok = (std::isinf(got) && std::isinf(wantF) && (got > 0) == (wantF > 0)) ||
             (std::fabs(want) > FLT_MAX * (1 - 1e-5) && std::fabs(want) < FLT_MAX * (1 + 1e-5) &&
              (got > 0) == (want > 0));
      } else {
        const Bound &b = bounds[c];
        double err = std::fabs(got - want);
        ulps = err / ulpOf(want);
        allowed = b.ulps + b.perArg * std::fabs(xi);
        // Under --fast-math results below 2^-126 may be 0.
        double absTol = fast ? std::max(b.absTol, std::ldexp(1.0, -126)) : b.absTol;
        ok = ulps <= allowed || err <= absTol;
        if (err > absTol)
          worstUlps = std::max(worstUlps, ulps);
      }
      double excess = ok ? (allowed > 0 ? ulps / allowed : 0) : INFINITY;
      if (!ok)
        w.bad++;
      if (excess > w.excess || (!ok && w.bad == 1)) {
        w = Worst{excess, ulps, xi, want, got, w.bad};
      }
    }
    std::printf("%-8s %-14s %zu values, max %.2f ulp (beyond the absolute bound), %ld outside "
                "the bound%s",
                build, bounds[c].name, n, worstUlps, w.bad, w.bad ? "" : " PASS\n");
    if (w.bad) {
      std::printf(" (e.g. x=%.9g: got %.9g, want %.9g) FAIL\n", w.x, w.got, w.ref);
      failures++;
    }
  }
  return failures;
}

template <class Launch>
int runBuild(const char *build, const std::vector<float> &x, const Bound (&bounds)[kCols],
             bool fast, Launch launch) {
  int64_t N = static_cast<int64_t>(x.size());
  DeviceBuffer dX = upload(x);
  size_t bytes = x.size() * kCols * 4;
  DeviceBuffer dR = poisoned(bytes + kSlackBytes);
  CK(launch(dX, dR, N));
  CK(cuCtxSynchronize());
  std::vector<float> r = download<float>(dR, x.size() * kCols);
  int failures = check(build, x, r, bounds, fast);
  if (!tailIntact(dR, bytes)) {
    std::printf("%s: wrote past the end FAIL\n", build);
    failures++;
  }
  return failures;
}

} // namespace

int main() {
  init();
  std::mt19937 rng = freshRng();
  std::vector<float> x = inputs(rng);
  // The bounds docs/language.md states. exp2 is ex2.approx squared (the error doubles); exp's
  // argument x * log2(e) is rounded to float32, which costs up to |x| ulp of the result; log
  // and log2 are accurate in absolute terms near 1 (where the result is near 0); sigmoid's
  // results below 2^-126 (x < -87) may be 0.
  const Bound exact[kCols] = {{"exp2", 8, 0, 0},
                              {"exp", 8, 1, 0},
                              {"log2", 4, 0, 0x1p-21},
                              {"log", 4, 0, 0x1p-21},
                              {"rsqrt", 4, 0, 0},
                              {"tanh", 16, 0, 0},
                              {"erf", 16, 0, 0},
                              {"sigmoid", 16, 1, 0x1p-126},
                              {"1/(1+exp(-x))", 16, 1, 0x1p-126},
                              {"exp2(x/2-1)", 8, 0, 0}};
  // --fast-math: tanh.approx.f32 for tanh and sigmoid (about 2^-11, relative for tanh,
  // absolute for sigmoid = 0.5 + 0.5 tanh(x / 2)), exp and exp2 flushing subnormal results.
  const Bound fast[kCols] = {
      {"exp2", 8, 0, 0},       {"exp", 8, 1, 0},           {"log2", 4, 0, 0x1p-21},
      {"log", 4, 0, 0x1p-21},  {"rsqrt", 4, 0, 0},         {"tanh", 0x1p13, 0, 0x1p-20},
      {"erf", 16, 0, 0},       {"sigmoid", 0, 0, 0x1p-10}, {"1/(1+exp(-x))", 16, 1, 0x1p-126},
      {"exp2(x/2-1)", 8, 0, 0}};
  int failures = 0;
  failures += runBuild("default", x, exact, false, [](CUdeviceptr a, CUdeviceptr b, int64_t n) {
    return tile::math_funcs::math_funcs(nullptr, a, b, n);
  });
  failures += runBuild("fast", x, fast, true, [](CUdeviceptr a, CUdeviceptr b, int64_t n) {
    return tile::math_fast::math_funcs(nullptr, a, b, n);
  });
  return verdict("math", failures);
}
