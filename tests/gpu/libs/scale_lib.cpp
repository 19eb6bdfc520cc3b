// A shared library around one build of scale.tile: two_libraries_gpu loads two of them, built
// with different -D values, into one process.
#include "scale.h"

extern "C" __attribute__((visibility("default"))) CUresult scale_launch(CUdeviceptr x,
                                                                        CUdeviceptr y, int64_t n) {
  return tile::scale::scale(nullptr, x, y, n);
}

extern "C" __attribute__((visibility("default"))) int scale_factor() {
  return static_cast<int>(tile::scale::constants::factor);
}
