// The header `tilec tune` wrote for the two-pass RMSNorm+SiLU of issue 9
// (tests/gpu/kernels/rmsnorm_two_pass.tile, tuned over its @tune space at M = 302400 and
// C = 160, 320, 640; scripts/tune-gpu.sh builds this on the GPU machine against it). Through the
// header's dispatching launch function: correct against a float64 reference at ragged widths and
// row counts (fresh random inputs, poisoned output with slack behind it), and at the tuned shapes
// the bandwidth (X and Y once) next to a device copy timed the same way (gpu_common.h).
#include "gpu_common.h"
#include "rmsnorm_two_pass.h"

using namespace gputest;

int main() {
  init();
  const float eps = 1e-6f;
  std::mt19937 rng = freshRng();
  int failures = rmsnormSiluWidths(rng, eps, [&](int64_t C, CUdeviceptr w, auto reference) {
    auto launch = [&](CUdeviceptr x, CUdeviceptr y, int64_t M) {
      return tile::rmsnorm_two_pass::rmsnorm_two_pass(nullptr, x, w, y, eps, M, C);
    };
    std::printf("C=%lld: variant %d at M=302400\n", static_cast<long long>(C),
                tile::rmsnorm_two_pass::rmsnorm_two_pass_variant(302400, C));
    if (C == 160 || C == 320 || C == 640)
      return halfRowsTable("rmsnorm_two_pass (tuned header)", "sm_90a", "C", C, 1.f, rng,
                           {int64_t{1}, int64_t{1003}, int64_t{302400}}, launch, reference);
    return halfRowsTable("rmsnorm_two_pass (tuned header)", "sm_90a", "C", C, 1.f, rng,
                         {int64_t{1}, int64_t{33}, int64_t{1003}}, launch, reference);
  });
  return verdict("rmsnorm_two_pass_tuned", failures);
}
