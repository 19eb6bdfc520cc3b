// A dimension computed from the ones passed (B is N x K // 2): the launch rejects a value that
// makes it empty, naming it, and launches once it is not.
#include "dim-expressions.h"

#include "expect.h"
#include "fake_cuda.h"

#include <cstdio>
#include <cstring>

namespace d = tile::dim_expressions;

int main() {
  CUcontext ctx = fake_cuda_create_context(0);
  CUdeviceptr b = 0x10000, s = 0x20000, c = 0x30000;
  EXPECT(d::unpack(nullptr, b, s, c, 64, 1) == CUDA_ERROR_INVALID_VALUE);
  std::printf("%s\n", d::last_error());
  EXPECT(fake_cuda_launches(ctx) == 0);
  EXPECT(d::unpack(nullptr, b, s, c, 64, 2) == CUDA_SUCCESS);
  EXPECT(fake_cuda_launches(ctx) == 1);
  fake_cuda_launch l = fake_cuda_last_launch();
  EXPECT(l.grid[0] == 1 && l.grid[1] == 1);
  std::printf("dim_checks: ok\n");
  return 0;
}
