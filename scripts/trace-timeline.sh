#!/usr/bin/env bash
# Per-warp clock timelines of attention benchmark cases (scripts/trace_timeline.py says what is
# stamped and what the report shows), in two halves like the benchmark:
#
#   scripts/trace-timeline.sh build CASE...   here: each case of tests/bench/attention-cases.txt
#       compiled by tilec (TILEC, default build/bin/tilec), its PTX patched with clock stamps,
#       assembled by ptxas into the header's image, and the benchmark program built with
#       -DBENCH_TRACE into .trace/bin/CASE
#   scripts/trace-timeline.sh run [B H S]     on the GPU machine, with .trace/ carried: each case
#       checked, timed (the stamps cost a little) and launched once more to fill the trace;
#       the report of every traced block goes to stdout and $OUT/trace-CASE.txt when OUT is set
#       (default shape 8 16 4096; the blocks traced are head 0 of batch 0)
#   scripts/trace-timeline.sh build-gemm CASE...   here: the same for cases of
#       tests/bench/gemm-cases.txt (tests/bench/gemm_bench.cpp, into .trace/gemm/CASE)
#   scripts/trace-timeline.sh run-gemm [M N K]     there: each gemm case checked, timed and traced
#       (default 16 8192 8192; the blocks traced are those of blockIdx.y = 0), with each block's
#       stages (trace_timeline.py report --stages) in the report
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
trace=$root/.trace
cuda=${CUDA_HOME:-/usr/local/cuda}
cases=$root/tests/bench/attention-cases.txt
gemm_cases=$root/tests/bench/gemm-cases.txt
conformance=${CONFORMANCE:-$root/../shared/conformance}
# shellcheck source=scripts/attention-case.sh
. "$root/scripts/attention-case.sh"

# case_line FILE NAME: the line of case NAME in the cases file FILE, or exit with why.
case_line() {
  local line
  line=$(awk -v n="$2" '($1 == "case" || $1 == "try") && $2 == n' "$1")
  [ -n "$line" ] || { echo "no case $2 in $1" >&2; exit 1; }
  echo "$line"
}

# traced_header SRC GEN NAME SITES [PATCH_OPTION...]: SRC compiled by tilec (with $flags) into GEN
# in namespace tile::bench::NAME, its PTX stamped (sites listed in SITES), assembled, and the
# stamped image put into the header in place of tilec's.
traced_header() {
  local src=$1 gen=$2 name=$3 sites=$4 stem
  shift 4
  stem=$(basename "$src" .tile)
  mkdir -p "$gen"
  "$tilec" compile "$src" -o "$gen" --emit cubin,header,ptx --namespace "tile::bench::$name" \
    ${flags[@]+"${flags[@]}"}
  python3 "$root/scripts/trace_timeline.py" patch "$gen/$stem.ptx" "$gen/traced.ptx" "$sites" "$@"
  "$cuda/bin/ptxas" -arch=sm_90a "$gen/traced.ptx" -o "$gen/traced.cubin"
  python3 "$root/scripts/trace_timeline.py" embed "$gen/$stem.h" "$gen/traced.cubin"
}

case "${1:-}" in
build)
  shift
  tilec=${TILEC:-$root/build/bin/tilec}
  rm -rf "$trace" && mkdir -p "$trace/bin"
  for name in "$@"; do
    line=$(case_line "$cases" "$name")
    read -r _ _ dtype _ src defines <<<"$line"
    # shellcheck disable=SC2086 # defines are whitespace-separated NAME=VALUE words
    case_flags $defines
    src=$(case_source "$src")
    gen=$trace/gen/$name stem=$(basename "$src" .tile)
    traced_header "$src" "$gen" "$name" "$trace/bin/$name.sites.json"
    case_program "$gen" "$stem" "$name" "$dtype" "$trace/bin/$name" -DBENCH_TRACE
  done
  echo "built: $*"
  ;;
run)
  shift
  [ $# -gt 0 ] || set -- 8 16 4096
  for bin in "$trace"/bin/*; do
    case $bin in *.json) continue ;; esac
    name=$(basename "$bin")
    TRACE_OUT=$trace/$name.bin "$bin" "$@" --warmup 5 --reps 20
    python3 "$root/scripts/trace_timeline.py" report "$trace/$name.bin" "$bin.sites.json" \
      | tee ${OUT:+"$OUT/trace-$name.txt"}
    detail=/dev/null
    [ -z "${OUT:-}" ] || detail=$OUT/trace-$name-block.txt
    python3 "$root/scripts/trace_timeline.py" report "$trace/$name.bin" "$bin.sites.json" --block \
      "${TRACE_BLOCK:-16}" --limit 160 >"$detail"
  done
  ;;
build-gemm)
  shift
  tilec=${TILEC:-$root/build/bin/tilec}
  rm -rf "$trace/gemm" && mkdir -p "$trace/gemm"
  for name in "$@"; do
    line=$(case_line "$gemm_cases" "$name")
    read -r _ _ kind _ src defines <<<"$line"
    # shellcheck disable=SC2086 # defines are whitespace-separated NAME=VALUE words
    case_flags $defines
    src=$(case_source "$src")
    gen=$trace/gemm/gen/$name stem=$(basename "$src" .tile)
    traced_header "$src" "$gen" "$name" "$trace/gemm/$name.sites.json" \
      --blocks "${TRACE_BLOCKS:-132}"
    fn=$(grep -oE '^inline ::CUresult [A-Za-z_][A-Za-z0-9_]*\(::CUstream' "$gen/$stem.h" |
      sed -E 's/^inline ::CUresult ([A-Za-z0-9_]+).*/\1/')
    g++ -std=c++17 -O2 -Wall -Wextra -I"$gen" -I"$root/tests/gpu" -I"$cuda/include" \
      -DBENCH_CASE="$name" -DBENCH_HEADER="\"$stem.h\"" -DBENCH_LAUNCH="tile::bench::$name::$fn" \
      -DBENCH_NS="tile::bench::$name" -DBENCH_KIND_"$kind" -DBENCH_TRACE \
      "$root/tests/bench/gemm_bench.cpp" -o "$trace/gemm/$name" -L"$cuda/lib64/stubs" -lcuda
  done
  echo "built: $*"
  ;;
run-gemm)
  shift
  [ $# -gt 0 ] || set -- 16 8192 8192
  for bin in "$trace"/gemm/*; do
    [ -f "$bin" ] && [ -x "$bin" ] || continue
    name=$(basename "$bin")
    TRACE_OUT=$trace/gemm/$name.bin "$bin" "$@" --warmup 5 --reps 20
    python3 "$root/scripts/trace_timeline.py" report "$trace/gemm/$name.bin" \
      "$bin.sites.json" --stages | tee ${OUT:+"$OUT/trace-$name.txt"}
    detail=/dev/null
    [ -z "${OUT:-}" ] || detail=$OUT/trace-$name-block.txt
    python3 "$root/scripts/trace_timeline.py" report "$trace/gemm/$name.bin" "$bin.sites.json" \
      --block "${TRACE_BLOCK:-16}" --limit 400 >"$detail"
  done
  ;;
*)
  echo "usage: $0 build CASE... | run [B H S] | build-gemm CASE... | run-gemm [M N K]"
  exit 1
  ;;
esac
