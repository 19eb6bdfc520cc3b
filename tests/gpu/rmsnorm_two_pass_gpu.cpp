// rmsnorm_two_pass (tests/gpu/kernels/rmsnorm_two_pass.tile: Y = silu(X * rsqrt(mean(X^2) + eps)
// * W) over a symbolic width C, two Pipelined passes over 64-column chunks through one shared
// buffer) through its generated header: error against a float64 CPU reference on fresh random
// inputs with a poisoned output, ragged M and C (a last chunk that is partly outside), and at
// M = 302400, C = 160, 320 and 640 the bandwidth (X and Y once) next to a d2d copy. The same
// program compiled with 64 x 80 and 64 x 160 chunks (widths that are not powers of two, whole
// chunks at C = 160), and with its second pass in order instead of last chunk first, are checked
// the same way.
#include "gpu_common.h"
#include "rms_c160/rmsnorm_two_pass.h"
#include "rms_c80/rmsnorm_two_pass.h"
#include "rms_fwd/rmsnorm_two_pass.h"
#include "rms_rowsum/rmsnorm_two_pass.h"
#include "rmsnorm_two_pass.h"

using namespace gputest;

int main() {
  init();
  const float eps = 1e-6f;
  std::mt19937 rng = freshRng();
  int failures = rmsnormSiluWidths(rng, eps, [&](int64_t C, CUdeviceptr w, auto reference) {
    auto check = [&](const char *name, auto kernel) {
      auto launch = [&](CUdeviceptr x, CUdeviceptr y, int64_t M) {
        return kernel(nullptr, x, w, y, eps, M, C);
      };
      // The bandwidth rows only for the widths the issue names; the others check correctness.
      if (C == 160 || C == 320 || C == 640)
        return halfRowsTable(name, "sm_90a", "C", C, 1.f, rng,
                             {int64_t{1}, int64_t{1003}, int64_t{302400}}, launch, reference);
      return halfRowsTable(name, "sm_90a", "C", C, 1.f, rng,
                           {int64_t{1}, int64_t{33}, int64_t{1003}}, launch, reference);
    };
    int f = check("rmsnorm_two_pass",
                  [](auto... a) { return tile::rmsnorm_two_pass::rmsnorm_two_pass(a...); });
    f += check("rmsnorm_two_pass_64x80",
               [](auto... a) { return tile::rms_c80::rmsnorm_two_pass(a...); });
    f += check("rmsnorm_two_pass_64x160",
               [](auto... a) { return tile::rms_c160::rmsnorm_two_pass(a...); });
    // The second pass in order (reverse_second_pass=False).
    f += check("rmsnorm_two_pass_fwd",
               [](auto... a) { return tile::rms_fwd::rmsnorm_two_pass(a...); });
    // The first pass's rows summed across threads in every iteration (sum_after_loop=False).
    f += check("rmsnorm_two_pass_rowsum",
               [](auto... a) { return tile::rms_rowsum::rmsnorm_two_pass(a...); });
    return f;
  });
  return verdict("rmsnorm_two_pass", failures);
}
