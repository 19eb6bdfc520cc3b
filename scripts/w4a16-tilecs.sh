#!/usr/bin/env bash
# Several portable tilecs (scripts/portable-tilec.sh) timed on the W4A16 words kernel
# (tests/gpu/kernels/w4a16_words.tile) at the decode shape, N = K = 8192, by `tilec bench`
# (L2 flushed before each launch): M = 16 with 5 and 4 stages and M = 1 with 5, each tilec in
# turn, ROUNDS times (default 2), so that builds compare within one run. On the GPU machine, with
# the archives carried:
#   OUT=$OUT scripts/w4a16-tilecs.sh NAME=ARCHIVE...
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/w4a16-tilecs}
mkdir -p "$out"
exec > >(tee "$out/w4a16-tilecs.txt") 2>&1
[ $# -gt 0 ] || { echo "usage: $0 NAME=ARCHIVE..."; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for spec in "$@"; do
  name=${spec%%=*}
  mkdir -p "$work/$name"
  tar -C "$work/$name" -xJf "${spec#*=}"
done
nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader
for round in $(seq "${ROUNDS:-2}"); do
  for spec in "$@"; do
    name=${spec%%=*}
    tilec=$work/$name/tilec/bin/tilec
    for case in 16:5 16:4 1:5; do
      m=${case%:*} stages=${case#*:}
      printf '%s round %s M=%s stages=%s: ' "$name" "$round" "$m" "$stages"
      "$tilec" bench "$root/tests/gpu/kernels/w4a16_words.tile" -D num_stages="$stages" \
        --shape "M=$m,N=8192,K=8192" --reps 100 | grep -E "median" | tr -s ' ' || echo "(failed)"
    done
  done
done
