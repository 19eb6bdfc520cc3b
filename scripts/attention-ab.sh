#!/usr/bin/env bash
# Two tilecs timed on flash_attention in one run, alternating, twice: samples/flash_attention.tile (the conformance program) as
# written (fp16, D = 128), causal, and bf16 D = 64 causal, at B8 H16 S4096, each by `tilec
# bench`. On the GPU machine, with .portable/before.tar.xz (the tilec to compare against; BEFORE
# names another archive) and .portable/tilec.tar.xz (scripts/portable-tilec.sh at each commit)
# carried:
#   OUT=$OUT scripts/attention-ab.sh
# EXTRA adds options (such as --overlap-gemms) to every build.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/attention-ab}
mkdir -p "$out"
exec > >(tee "$out/attention-ab.txt") 2>&1
conformance=${CONFORMANCE:-$root/samples}
# shellcheck source=scripts/ab-tilecs.sh
source "$root/scripts/ab-tilecs.sh"
for round in 1 2; do
  for which in before tilec; do
    tilec=$work/$which/tilec/bin/tilec
    echo "== round $round, $which ($("$tilec" --version 2>&1 | head -1))"
    for defs in "" "-D causal=True" "-D causal=True -D D=64 -D dtype=bfloat16"; do
      echo "-- ${defs:-as written}"
      # shellcheck disable=SC2086 # defs and EXTRA are whitespace-separated options
      "$tilec" bench "$conformance/flash_attention.tile" $defs ${EXTRA:-} \
        --shape B=8,S=4096,H=16 --reps 30 | grep -E "median|TFLOP"
    done
  done
done
rm -rf "$work"
