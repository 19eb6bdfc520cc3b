#!/usr/bin/env bash
# The GPU tests on an AMD GPU (MI300: gfx942, MI200: gfx90a), through the HIP launch headers: the
# test programs of scripts/gpu-test.sh whose kernels compile for AMD (vector_add, softmax,
# rmsnorm_silu, warp_reduce, gemm: the same sources, the same checks against CPU references),
# built against HIP with tests/gpu/hip/cuda.h in place of <cuda.h>. No AMD GPU has run them yet
# (docs/amd.md).
#
#   scripts/gpu-test-hip.sh build   compile the samples for gfx942 and gfx90a (one header, both
#                                   code objects) with TILEC (default build/bin/tilec, or a
#                                   portable tilec from scripts/portable-tilec.sh) and build the
#                                   programs into GPU_HIP_DIR (default .gpu-hip/) against the HIP
#                                   of HIP_PATH (default /opt/rocm where it exists, else /usr)
#   scripts/gpu-test-hip.sh run     on the AMD machine: run every built program; the log goes to
#                                   $OUT/gpu-hip-results.txt when OUT is set
#
# Build where the programs will run (they link the machine's libamdhip64), or with the same ROCm.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${GPU_HIP_DIR:-$root/.gpu-hip}
hip=${HIP_PATH:-$([ -d /opt/rocm ] && echo /opt/rocm || echo /usr)}
programs=(vector_add softmax rmsnorm_silu warp_reduce gemm)
case "${1:-}" in
build)
  tilec=${TILEC:-$root/build/bin/tilec}
  [ -x "$tilec" ] || { echo "build tilec first (scripts/build.sh)"; exit 1; }
  rm -rf "$dir" && mkdir -p "$dir/gen" "$dir/bin"
  for sample in vector_add softmax rmsnorm_silu warp_reduce gemm_relu gemm_bias_gelu; do
    "$tilec" compile "$root/samples/$sample.tile" -o "$dir/gen" --arch gfx942,gfx90a \
      --emit cubin,header,layout
  done
  libdir=$hip/lib
  [ -e "$libdir/libamdhip64.so" ] || libdir=$hip/lib/x86_64-linux-gnu
  for name in "${programs[@]}"; do
    ${CXX:-g++} -std=c++17 -O2 -Wall -Wextra -Werror -pthread -I"$root/tests/gpu/hip" \
      -I"$dir/gen" -I"$root/tests/gpu" -I"$hip/include" "$root/tests/gpu/${name}_gpu.cpp" \
      -o "$dir/bin/${name}_gpu" -L"$libdir" -Wl,-rpath,"$libdir" -lamdhip64
  done
  echo "built: $(ls "$dir/bin" | tr '\n' ' ')"
  ;;
run)
  log=${OUT:-$dir}/gpu-hip-results.txt
  mkdir -p "$(dirname "$log")"
  exec > >(tee "$log") 2>&1
  echo "# tilec GPU tests on HIP, $(date -u +%Y-%m-%dT%H:%MZ)"
  status=0
  for name in "${programs[@]}"; do
    echo "## ${name}_gpu"
    "$dir/bin/${name}_gpu" || status=1
  done
  exit "$status"
  ;;
*)
  echo "usage: $0 build|run" >&2
  exit 2
  ;;
esac
