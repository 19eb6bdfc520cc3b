#!/usr/bin/env bash
# The two-pass RMSNorm+SiLU GPU test (tests/gpu/rmsnorm_two_pass_gpu.cpp) over configurations of
# its kernel (tests/gpu/kernels/rmsnorm_two_pass.tile: block_M, block_C, num_stages), one host
# program per configuration, each checked against its CPU reference before it is timed.
#
#   scripts/sweep-rmsnorm-two-pass.sh build   here (needs build/bin/tilec, or TILEC=...)
#   scripts/sweep-rmsnorm-two-pass.sh run     on the GPU machine, with .bench/ carried
#
# SWEEP lists the configurations as block_M:block_C:num_stages words.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/.bench/rms
cuda=${CUDA_HOME:-/usr/local/cuda}
configs=${SWEEP:-"16:64:3 32:64:3 64:64:3 128:64:3 64:32:4 128:32:4 64:128:2"}

case "${1:-}" in
build)
  tilec=${TILEC:-$root/build/bin/tilec}
  [ -x "$tilec" ] || { echo "build tilec first (scripts/build.sh), or set TILEC"; exit 1; }
  rm -rf "$out" && mkdir -p "$out"
  for c in $configs; do
    IFS=: read -r m bc s <<<"$c"
    d=$out/m${m}_c${bc}_s${s}
    mkdir -p "$d/gen"
    "$tilec" compile "$root/tests/gpu/kernels/rmsnorm_two_pass.tile" -o "$d/gen" \
      -D block_M="$m" -D block_C="$bc" -D num_stages="$s" --emit cubin,header
    g++ -std=c++17 -O2 -pthread -I"$d/gen" -I"$root/tests/gpu" -I"$cuda/include" \
      "$root/tests/gpu/rmsnorm_two_pass_gpu.cpp" -o "$d/run" -L"$cuda/lib64/stubs" -lcuda -ldl
  done
  echo "built: $(ls "$out" | tr '\n' ' ')"
  ;;
run)
  [ -d "$out" ] || { echo "no $out: run 'build' here and carry .bench"; exit 1; }
  status=0
  for d in "$out"/*/; do
    echo "## $(basename "$d") (block_M, block_C, num_stages)"
    "$d/run" | grep -E "RESULT|FAIL|passed" || status=1
  done
  exit $status
  ;;
*)
  sed -n '2,11p' "$0"
  exit 2
  ;;
esac
