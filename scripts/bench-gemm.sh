#!/usr/bin/env bash
# GEMM benchmark against cuBLAS and Triton, in two halves like scripts/gpu-test.sh (this machine
# has LLVM and no GPU, the GPU machine the reverse). The cases are listed in
# tests/bench/gemm-cases.txt.
#
#   scripts/bench-gemm.sh build   here: compile every case with tilec (TILEC, default
#                                 build/bin/tilec) into .bench/gen/CASE/ in namespace
#                                 tile::bench::CASE, and build one host program per case,
#                                 .bench/bin/CASE (tests/bench/gemm_bench.cpp)
#   scripts/bench-gemm.sh check   on the GPU machine: every built case at its shapes, checked
#                                 against the CPU reference, without peers or timing
#   scripts/bench-gemm.sh run     on the GPU machine, with .bench/ carried there: run every case
#                                 at its shapes, each next to its cuBLAS (torch.matmul,
#                                 torch._scaled_mm for fp8) and Triton peers timed the same way
#                                 (scripts/bench_gemm.py); the table goes to stdout and to
#                                 $OUT/bench-gemm.md when OUT is set
#
# build and run take BENCH_CASES (a regular expression over case names; build then builds only
# those), run also BENCH_SHAPES (a comma list of
# MxNxK overriding every case's shapes), BENCH_WARMUP and BENCH_REPS (default 10 and 50),
# BENCH_BATCH (default 1: each launch timed alone between two events, the host's launch latency
# included, a large part of a kernel of tens of microseconds; with N, each timed run is N
# launches back to back, as a stream or graph launches them, counted as their mean; the peers
# likewise) and BENCH_SEED. A case that fails to compile, launch or check prints FAILED with the
# reason and the others go on; the exit status is non-zero when any case failed (a "try" case
# that tilec does not support yet is reported and does not count).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$root/.bench
cuda=${CUDA_HOME:-/usr/local/cuda}
cases=$root/tests/bench/gemm-cases.txt
conformance=${CONFORMANCE:-$root/../shared/conformance}

# Compiles one case line (case|try NAME KIND SET SOURCE [D=V|--flag...]); returns non-zero on failure,
# with the reason in .bench/failed/NAME.txt.
build_case() {
  local tilec=$1 name=$2 kind=$3 src=$4
  shift 4
  local defines=() d
  for d in "$@"; do
    case $d in
    --*) defines+=("$d") ;; # a tilec flag, e.g. --fast-math
    *) defines+=(-D "$d") ;;
    esac
  done
  case $src in
  conformance/*) src=$conformance/${src#conformance/} ;;
  *) src=$root/$src ;;
  esac
  local gen=$bench/gen/$name log=$bench/failed/$name.txt
  mkdir -p "$gen"
  if ! "$tilec" compile "$src" -o "$gen" --emit cubin,header --namespace "tile::bench::$name" \
    ${defines[@]+"${defines[@]}"} >"$log" 2>&1; then
    sed -i '1i tilec compile failed:' "$log"
    return 1
  fi
  local stem header fn
  stem=$(basename "$src" .tile)
  header=$gen/$stem.h
  fn=$(grep -oE '^inline ::CUresult [A-Za-z_][A-Za-z0-9_]*\(::CUstream' "$header" |
    sed -E 's/^inline ::CUresult ([A-Za-z0-9_]+).*/\1/' || true)
  if [ "$(printf '%s\n' "$fn" | grep -c .)" != 1 ]; then
    echo "expected one kernel launch function in $header, found: ${fn:-none}" >"$log"
    return 1
  fi
  if ! g++ -std=c++17 -O2 -Wall -Wextra -I"$gen" -I"$root/tests/gpu" -I"$cuda/include" \
    -DBENCH_CASE="$name" -DBENCH_HEADER="\"$stem.h\"" -DBENCH_LAUNCH="tile::bench::$name::$fn" \
    -DBENCH_KIND_"$kind" "$root/tests/bench/gemm_bench.cpp" -o "$bench/bin/$name" \
    -L"$cuda/lib64/stubs" -lcuda >"$log" 2>&1; then
    sed -i '1i host program build failed:' "$log"
    return 1
  fi
  rm -f "$log"
}

case "${1:-}" in
build)
  tilec=${TILEC:-$root/build/bin/tilec}
  [ -x "$tilec" ] || { echo "build tilec first (scripts/build.sh), or set TILEC"; exit 1; }
  [ -d "$conformance" ] || { echo "no conformance folder at $conformance (set CONFORMANCE)"; exit 1; }
  rm -rf "$bench" && mkdir -p "$bench/gen" "$bench/bin" "$bench/failed"
  # BENCH_CASES at build time builds (and lists for run) only the cases it matches.
  awk -v re="${BENCH_CASES:-}" '($1 != "case" && $1 != "try") || re == "" || $2 ~ re' \
    "$cases" >"$bench/cases.txt"
  status=0 built=() failed=() skipped=()
  while read -r keyword name kind _set src defines; do
    case $keyword in case | try) ;; *) continue ;; esac
    [[ -z ${BENCH_CASES:-} || $name =~ $BENCH_CASES ]] || continue
    # shellcheck disable=SC2086 # defines are whitespace-separated NAME=VALUE words
    if build_case "$tilec" "$name" "$kind" "$src" $defines; then
      built+=("$name")
    elif [ "$keyword" = try ]; then
      skipped+=("$name")
      echo "SKIPPED $name: $(sed -n 2p "$bench/failed/$name.txt")"
    else
      failed+=("$name")
      status=1
      echo "FAILED $name:" && sed 's/^/  /' "$bench/failed/$name.txt"
    fi
  done <"$cases"
  git -C "$root" rev-parse --short HEAD >"$bench/COMMIT" 2>/dev/null || true
  "$tilec" --version >"$bench/TILEC_VERSION" 2>&1 || true
  echo "built (${#built[@]}): ${built[*]}"
  [ ${#skipped[@]} = 0 ] || echo "skipped, not supported yet (${#skipped[@]}): ${skipped[*]}"
  [ ${#failed[@]} = 0 ] || echo "FAILED (${#failed[@]}): ${failed[*]}"
  exit $status
  ;;
check)
  # Correctness only, without peers (no torch needed): every built case at its shapes (or
  # BENCH_SHAPES), one warm-up and the fewest timed launches (20); non-zero when any failed.
  [ -f "$bench/cases.txt" ] || { echo "no .bench/cases.txt: run '$0 build' first (and carry .bench/)"; exit 1; }
  status=0
  while read -r keyword name _kind set _rest; do
    case $keyword in case | try) ;; *) continue ;; esac
    [ -x "$bench/bin/$name" ] || continue
    shapes=${BENCH_SHAPES:-$(awk -v s="$set" '$1 == "shapes" && $2 == s { $1 = $2 = ""; print }' "$bench/cases.txt")}
    for shape in ${shapes//,/ }; do
      # shellcheck disable=SC2046 # MxNxK becomes three arguments
      out=$(timeout 60 "$bench/bin/$name" $(tr x ' ' <<<"$shape") --warmup 1 --reps 20 2>&1) || true
      grep -E 'BENCH|FAIL' <<<"$out" || true
      if ! grep -q 'status=ok' <<<"$out"; then
        echo "FAILED $name $shape:" && head -3 <<<"$out" | sed 's/^/  /'
        status=1
      fi
    done
  done <"$bench/cases.txt"
  exit $status
  ;;
run)
  [ -f "$bench/cases.txt" ] || { echo "no .bench/cases.txt: run '$0 build' first (and carry .bench/)"; exit 1; }
  exec python3 "$root/scripts/bench_gemm.py" --bench "$bench" ${OUT:+--out "$OUT/bench-gemm.md"}
  ;;
*)
  echo "usage: $0 build|check|run"
  exit 1
  ;;
esac
