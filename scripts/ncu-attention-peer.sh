#!/usr/bin/env bash
# Nsight Compute on tilec's flash attention and on cuDNN's (PyTorch SDPA, cuDNN backend) at the
# same shape, one launch each with the full set, to see where the two kernels differ: their
# metrics side by side (scripts/ncu-compare.py) and each one's warp-stall samples by SASS opcode
# (scripts/ncu-stalls.py --by-opcode).
#
#   on the GPU machine, with .bench-attention/ built (scripts/bench-attention.sh build, or
#   unpacked from scripts/issue-rows.sh's archive):
#     OUT=$OUT scripts/ncu-attention-peer.sh [CASE [B H S]]   (default fa_fp16_d128 8 16 4096)
#
# Writes to $OUT: compare.md, stalls.txt, and the raw and source pages (xz-compressed CSV).
# The peer gets the case's dtype and causality as bench_attention.py gives them.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-$root/.ncu-attention}
case_name=${1:-fa_fp16_d128}
B=${2:-8} H=${3:-16} S=${4:-4096}
bin=$root/.bench-attention/bin/$case_name
[ -x "$bin" ] || { echo "no $bin: run scripts/bench-attention.sh build" >&2; exit 1; }
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# D, dtype and causality as the case's program reports them at the smallest shape.
line=$("$bin" 1 1 1 --warmup 0 --reps 1 | grep '^BENCH ' | tail -1)
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
D=$(field D) dtype=$(field dtype) causal=$(field causal)
echo "case $case_name: B=$B H=$H S=$S D=$D dtype=$dtype causal=$causal" | tee "$out/compare.md"

ncu_full() { # NAME REGEX PROGRAM...: one launch (the third) with the full set
  local name=$1 regex=$2
  shift 2
  ncu --clock-control none --kernel-name "regex:$regex" --launch-skip 2 --launch-count 1 \
    --set full -o "$tmp/$name" "$@" >"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; return 1; }
  ncu -i "$tmp/$name.ncu-rep" --page raw --csv >"$tmp/$name-raw.csv"
  ncu -i "$tmp/$name.ncu-rep" --page source --print-source sass --csv >"$tmp/$name-source.csv"
}

ncu_full tilec flash_attention "$bin" "$B" "$H" "$S" --warmup 2 --reps 20

cat >"$tmp/peer.py" <<EOF
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
dt = torch.float16 if "$dtype" == "fp16" else torch.bfloat16
q, k, v = (torch.randn($B, $H, $S, $D, device="cuda", dtype=dt) for _ in range(3))
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(4):
        torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=("$causal" == "1"))
torch.cuda.synchronize()
EOF
ncu_full cudnn 'sdpa|fmha|fprop' python3 "$tmp/peer.py"

python3 "$root/scripts/ncu-compare.py" "$tmp/tilec-raw.csv" "$tmp/cudnn-raw.csv" | tee -a "$out/compare.md"
for k in tilec cudnn; do
  echo "== $k"
  python3 "$root/scripts/ncu-stalls.py" "$tmp/$k-source.csv" 30 --by-opcode
done >"$out/stalls.txt" 2>&1
for k in tilec cudnn; do
  xz -c "$tmp/$k-raw.csv" >"$out/$k-raw.csv.xz"
  xz -c "$tmp/$k-source.csv" >"$out/$k-source.csv.xz"
done
ls -l "$out"
