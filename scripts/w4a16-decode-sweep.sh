#!/usr/bin/env bash
# The W4A16 words kernel (tests/gpu/kernels/w4a16_words.tile) at the decode shape M=16,
# N=K=8192 over block_K and the number of stages, timed by `tilec bench` (L2 flushed before each
# launch, so the weights come from DRAM). On the GPU machine, with .portable/tilec.tar.xz
# carried (scripts/portable-tilec.sh):
#   OUT=$OUT scripts/w4a16-decode-sweep.sh
# CONFIGS overrides the list of block_K:num_stages pairs; SHAPE the shape.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/w4a16-decode-sweep}
mkdir -p "$out"
exec > >(tee "$out/w4a16-decode-sweep.txt") 2>&1
# shellcheck source=scripts/unpack-portable.sh
source "$root/scripts/unpack-portable.sh"
echo "$("$tilec" --version 2>&1 | head -1)"
for config in ${CONFIGS:-128:8 256:4 256:6 256:8 512:3 512:4 512:5 512:6}; do
  bk=${config%:*} stages=${config#*:}
  echo "-- block_K=$bk num_stages=$stages"
  "$tilec" bench "$root/tests/gpu/kernels/w4a16_words.tile" -D block_K="$bk" \
    -D num_stages="$stages" --shape "${SHAPE:-M=16,N=8192,K=8192}" --reps 100 |
    grep -E "grid|median|TFLOP" || echo "(failed)"
done
