// The clock trace of a benchmark program built with -DBENCH_TRACE around a cubin that
// scripts/trace_timeline.py patched: one more launch into the zeroed trace buffer, written to
// $TRACE_OUT (default trace.bin) for `trace_timeline.py report`.
#pragma once

#include "gpu_common.h"

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace benchtrace {

inline void dumpTrace(CUmodule module, const std::function<CUresult()> &launch) {
  CUdeviceptr trace = 0;
  size_t bytes = 0;
  CK(cuModuleGetGlobal(&trace, &bytes, module, "tilec_trace"));
  CK(cuMemsetD8(trace, 0, bytes));
  CK(launch());
  CK(cuCtxSynchronize());
  std::vector<unsigned char> host(bytes);
  CK(cuMemcpyDtoH(host.data(), trace, bytes));
  const char *path = std::getenv("TRACE_OUT");
  FILE *f = std::fopen(path ? path : "trace.bin", "wb");
  if (!f || std::fwrite(host.data(), 1, bytes, f) != bytes || std::fclose(f) != 0) {
    std::fprintf(stderr, "cannot write the trace\n");
    std::exit(1);
  }
}

} // namespace benchtrace
