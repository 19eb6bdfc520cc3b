#!/usr/bin/env bash
# Tests the GEMM benchmark's host program (gemm_bench.cpp) without a GPU: every kind built against
# a host-memory stand-in for libcuda (mock/mock_cuda.cpp) and a kernel computed on the host
# (mock/mock_kernel.h). A correct kernel must pass, each injected fault (unwritten outputs, a write
# past the end, a wrong value, a failed launch) must print FAILED and exit non-zero, and bad
# arguments must be refused with a usage message (exit 64).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cuda=${CUDA_HOME:-/usr/local/cuda}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

g++ -std=c++17 -O2 -shared -fPIC -I"$cuda/include" "$here/mock/mock_cuda.cpp" \
  -Wl,-soname,libcuda.so.1 -o "$tmp/libcuda.so.1"
export LD_LIBRARY_PATH=$tmp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

failures=0
expect() { # expect STATUS PATTERN COMMAND...: COMMAND exits STATUS and prints PATTERN
  local want=$1 pattern=$2
  shift 2
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" = "$want" ] && grep -qE -- "$pattern" <<<"$out"; then
    echo "ok   $* (exit $rc)"
  else
    echo "FAIL $*: exit $rc, want $want and /$pattern/; output:"
    sed 's/^/    /' <<<"$out"
    failures=$((failures + 1))
  fi
}

for kind in relu bias_gelu tn_scale nt fp8_nt; do
  g++ -std=c++17 -O2 -Wall -Wextra -Werror -I"$here/mock" -I"$root/tests/gpu" -I"$cuda/include" \
    -DBENCH_CASE="mock_$kind" -DBENCH_HEADER='"mock_kernel.h"' -DBENCH_LAUNCH=tile::bench::mock::gemm \
    -DBENCH_KIND_"$kind" "$root/tests/bench/gemm_bench.cpp" -o "$tmp/$kind" \
    -L"$cuda/lib64/stubs" -lcuda
  bin=$tmp/$kind
  expect 0 "kind=$kind .* status=ok" "$bin" 64 48 40                # every entry checked
  expect 0 "M=333 N=517 K=200 .*checked=172161 .*status=ok" "$bin" 333 517 200
  expect 0 "checked=260 .*reps=20 batch=1 status=ok" "$bin" 1024 1024 300 --samples 256 --reps 20 --warmup 0
  expect 0 "reps=20 batch=3 status=ok" "$bin" 64 48 40 --reps 20 --warmup 1 --batch 3
  expect 0 "^case=mock_$kind kind=$kind" "$bin" --describe
done

bin=$tmp/relu
for fault in unwritten overrun wrong; do
  expect 1 "status=FAILED reason=.*" env MOCK_FAULT=$fault "$bin" 100 70 33
  expect 1 "status=FAILED reason=.*" env MOCK_FAULT=$fault "$bin" 1024 1024 300
done
expect 1 "status=FAILED reason=launch:" env MOCK_FAULT=launch "$bin" 64 64 64
expect 2 "CUDA_ERROR_NO_DEVICE" env MOCK_NO_DEVICE=1 "$bin" 64 64 64
expect 64 "expected three dimensions" "$bin"
expect 64 "expected three dimensions" "$bin" 64 64
expect 64 "expected three dimensions" "$bin" 64 64 64 64
expect 64 "M must be a whole number" "$bin" 0 64 64
expect 64 "N must be a whole number" "$bin" 64 6x4 64
expect 64 "K must be a whole number" "$bin" 64 64 1x
expect 64 "K must be a whole number in \[1, 131072\]" "$bin" 64 64 200000
expect 64 "--reps must be a whole number in \[20" "$bin" 64 64 64 --reps 5
expect 64 "--warmup needs a value" "$bin" 64 64 64 --warmup
expect 64 "--batch must be a whole number in \[1, 1000\]" "$bin" 64 64 64 --batch 0
expect 64 "--batch must be a whole number in \[1, 1000\]" "$bin" 64 64 64 --batch 1001
expect 64 "unknown option --fast" "$bin" 64 64 64 --fast

echo "host-test: $failures failure(s)"
[ "$failures" = 0 ]
