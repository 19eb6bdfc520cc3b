#!/usr/bin/env bash
# Two tilecs timed on the W4A16 kernels in one run, alternating, twice, N=K=8192: the large-M
# sample (samples/dequant_gemm_w4a16_large.tile, the weights as wgmma's A operand) as written at
# M=4096, the words kernel (tests/gpu/kernels/w4a16_words.tile, 4 stages) at M=16 and M=1, and
# the B-in-registers kernel (tests/gpu/kernels/w4a16_breg.tile, block_K 512) at M=16. On the GPU
# machine, with .portable/before.tar.xz (the tilec to compare against; BEFORE names another
# archive) and .portable/tilec.tar.xz (scripts/portable-tilec.sh at each commit) carried:
#   OUT=$OUT scripts/w4a16-ab.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/w4a16-ab}
mkdir -p "$out"
exec > >(tee "$out/w4a16-ab.txt") 2>&1
# shellcheck source=scripts/ab-tilecs.sh
source "$root/scripts/ab-tilecs.sh"
for round in 1 2; do
  for which in before tilec; do
    tilec=$work/$which/tilec/bin/tilec
    echo "== round $round, $which ($("$tilec" --version 2>&1 | head -1))"
    "$tilec" bench "$root/samples/dequant_gemm_w4a16_large.tile" \
      --shape M=4096,N=8192,K=8192 --reps 30 | grep -E "median|TFLOP"
    for m in 16 1; do
      "$tilec" bench "$root/tests/gpu/kernels/w4a16_words.tile" -D num_stages=4 \
        --shape M=$m,N=8192,K=8192 --reps 100 | grep -E "median|TFLOP"
    done
    "$tilec" bench "$root/tests/gpu/kernels/w4a16_breg.tile" -D block_K=512 \
      --shape M=16,N=8192,K=8192 --reps 100 | grep -E "median|TFLOP"
  done
done
rm -rf "$work"
