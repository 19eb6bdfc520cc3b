#!/usr/bin/env bash
# Two tilecs timed on the W4A16 kernels in one run, alternating, twice: the sample at M=4096 in
# its large configuration (128x128 blocks, 256 threads, wgmma) and the B-in-registers kernel at
# the decode shape M=16 (block_K 512), N=K=8192 for both. On the GPU machine, with
# .portable/before.tar.xz (the tilec to compare against; BEFORE names another archive) and
# .portable/tilec.tar.xz (scripts/portable-tilec.sh at each commit) carried:
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
    "$tilec" bench "$root/samples/dequant_gemm_w4a16.tile" -D block_M=128 -D block_N=128 \
      -D threads=256 --shape M=4096,N=8192,K=8192 --reps 30 | grep -E "median|TFLOP"
    "$tilec" bench "$root/tests/gpu/kernels/w4a16_breg.tile" -D block_K=512 \
      --shape M=16,N=8192,K=8192 --reps 50 | grep -E "median|TFLOP"
  done
done
rm -rf "$work"
