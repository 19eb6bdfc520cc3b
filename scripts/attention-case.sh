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

# case_source SOURCE: the program's path (SOURCE is relative to the repository, or
# conformance/FILE for the shared conformance folder).
case_source() {
  case $1 in
  conformance/*) echo "$conformance/${1#conformance/}" ;;
  *) echo "$root/$1" ;;
  esac
}
