#!/usr/bin/env bash
# Attention benchmark against PyTorch's SDPA (cuDNN and FlashAttention-2 backends), in two halves
# like scripts/bench-gemm.sh. The cases are listed in tests/bench/attention-cases.txt.
#
#   scripts/bench-attention.sh build   here: compile every case with tilec (TILEC, default
#                                      build/bin/tilec) into .bench-attention/gen/CASE/ in
#                                      namespace tile::bench::CASE, and build one host program
#                                      per case, .bench-attention/bin/CASE
#                                      (tests/bench/attention_bench.cpp)
#   scripts/bench-attention.sh run     on the GPU machine, with .bench-attention/ carried there:
#                                      every case at its shapes next to its peers
#                                      (scripts/bench_attention.py); the table goes to stdout and
#                                      to $OUT/bench-attention.md when OUT is set
#
# run takes BENCH_CASES (a regular expression over case names), BENCH_SHAPES (a comma list of
# BxHxS overriding every case's shapes), BENCH_WARMUP and BENCH_REPS (default 10 and 50),
# BENCH_BATCH (launches back to back in each timed run, as scripts/bench-gemm.sh), BENCH_SEED,
# and BENCH_ROUNDS (default 1; with N, each row runs tilec and cuDNN N times in alternating
# order and reports the medians). The exit status is non-zero when any case failed
# to build, launch or check.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$root/.bench-attention
cases=$root/tests/bench/attention-cases.txt
conformance=${CONFORMANCE:-$root/../shared/conformance}
# shellcheck source=scripts/attention-case.sh
. "$root/scripts/attention-case.sh"

# Compiles one case (NAME DTYPE SOURCE [D=V|--flag...]); returns non-zero on failure, with the
# reason in .bench-attention/failed/NAME.txt.
build_case() {
  local tilec=$1 name=$2 dtype=$3 src=$4
  shift 4
  local flags
  case_flags "$@"
  src=$(case_source "$src")
  local gen=$bench/gen/$name log=$bench/failed/$name.txt stem
  stem=$(basename "$src" .tile)
  mkdir -p "$gen"
  if ! "$tilec" compile "$src" -o "$gen" --emit cubin,header --namespace "tile::bench::$name" \
    ${flags[@]+"${flags[@]}"} >"$log" 2>&1; then
    sed -i '1i tilec compile failed:' "$log"
    return 1
  fi
  if ! case_program "$gen" "$stem" "$name" "$dtype" "$bench/bin/$name" >"$log" 2>&1; then
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
  cp "$cases" "$bench/cases.txt"
  status=0 built=() failed=()
  while read -r keyword name dtype _set src defines; do
    [ "$keyword" = case ] || continue
    # shellcheck disable=SC2086 # defines are whitespace-separated NAME=VALUE words
    if build_case "$tilec" "$name" "$dtype" "$src" $defines; then
      built+=("$name")
    else
      failed+=("$name")
      status=1
      echo "FAILED $name:" && sed 's/^/  /' "$bench/failed/$name.txt"
    fi
  done <"$cases"
  git -C "$root" rev-parse --short HEAD >"$bench/COMMIT" 2>/dev/null || true
  "$tilec" --version >"$bench/TILEC_VERSION" 2>&1 || true
  echo "built (${#built[@]}): ${built[*]}"
  [ ${#failed[@]} = 0 ] || echo "FAILED (${#failed[@]}): ${failed[*]}"
  exit $status
  ;;
run)
  [ -f "$bench/cases.txt" ] || { echo "no .bench-attention/cases.txt: run '$0 build' first (and carry .bench-attention/)"; exit 1; }
  exec python3 "$root/scripts/bench_attention.py" --bench "$bench" ${OUT:+--out "$OUT/bench-attention.md"}
  ;;
*)
  echo "usage: $0 build|run"
  exit 1
  ;;
esac
