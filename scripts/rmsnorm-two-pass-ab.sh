#!/usr/bin/env bash
# The two-pass RMSNorm (tests/gpu/kernels/rmsnorm_two_pass.tile, M = 302400, C = 160, 320, 640)
# tuned over six configurations by two tilecs in one run, next to copies of X's bytes, then every
# GPU test. On the GPU machine, with .portable/before.tar.xz (the tilec to compare against, from
# scripts/portable-tilec.sh at the older commit), .portable/tilec.tar.xz and .gpu/{bin,lib,COMMIT}
# (scripts/gpu-test.sh build) carried:
#   OUT=$OUT scripts/rmsnorm-two-pass-ab.sh
set -u
export PATH=/usr/local/cuda/bin:$PATH
for which in before tilec; do
  work=$(mktemp -d); tar -C "$work" -xJf .portable/$which.tar.xz
  echo "== tilec: $which"
  [ $which = before ] && for C in 160 320 640; do "$work/tilec/bin/tilec" bench --copy $((302400 * C * 2)) --reps 30 | tail -n 1; done
  "$work/tilec/bin/tilec" tune tests/gpu/kernels/rmsnorm_two_pass.tile --space 'block_M=16,32,64;block_C=32,64;num_stages=6;threads=128;reverse_second_pass=True' --shapes 'M=302400,C=160;M=302400,C=320;M=302400,C=640' --arg eps=1e-6 2>&1 | grep -E "shape|GB/s|winner"
done
OUT=$OUT scripts/gpu-test.sh run > $OUT/gpu.txt 2>&1
grep -E "passed|FAIL|PASS|SKIP|RESULT rmsnorm_two_pass sm_90a M=302400" $OUT/gpu.txt
