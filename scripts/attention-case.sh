# shellcheck shell=bash disable=SC2154 # $root and $conformance come from the sourcing script
# Sourced by scripts/bench-attention.sh and scripts/trace-timeline.sh: how a case of
# tests/bench/attention-cases.txt becomes a tilec command line. Needs $root and $conformance.

# case_flags WORD...: the case's NAME=VALUE words as -D options and its --flags as they are,
# into the array `flags`.
case_flags() {
  flags=()
  local d
  for d in "$@"; do
    case $d in
    --*) flags+=("$d") ;;
    *) flags+=(-D "$d") ;;
    esac
  done
}

# case_program GEN STEM NAME DTYPE OUT [FLAG...]: tests/bench/attention_bench.cpp built into OUT
# around the header GEN/STEM.h of case NAME (namespace tile::bench::NAME), with FLAGs.
case_program() {
  local gen=$1 stem=$2 name=$3 dtype=$4 out=$5 cuda=${CUDA_HOME:-/usr/local/cuda}
  shift 5
  [ "$dtype" = bf16 ] && set -- "$@" -DBENCH_BF16
  g++ -std=c++17 -O2 -Wall -Wextra -I"$gen" -I"$root/tests/gpu" -I"$cuda/include" \
    -DBENCH_CASE="$name" -DBENCH_HEADER="\"$stem.h\"" -DBENCH_NS="tile::bench::$name" "$@" \
    "$root/tests/bench/attention_bench.cpp" -o "$out" -L"$cuda/lib64/stubs" -lcuda
}

# case_source SOURCE: the program's path (SOURCE is relative to the repository, or
# conformance/FILE for the shared conformance folder).
case_source() {
  case $1 in
  conformance/*) echo "$conformance/${1#conformance/}" ;;
  *) echo "$root/$1" ;;
  esac
}
