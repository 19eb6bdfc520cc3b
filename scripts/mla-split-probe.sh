#!/usr/bin/env bash
# Where MLA decode split's time goes at small batches and kv 32768: each of its two kernels timed
# alone by `tilec bench` (back to back, --no-flush, as the GPU test times them together), over
# the number of splits, the batch and the KV length, for the conformance program as written and
# for variants of it made with sed (COMBINES, below). On the GPU machine, with
# .portable/tilec.tar.xz carried (scripts/portable-tilec.sh):
#   OUT=$OUT scripts/mla-split-probe.sh
# SPLITS, BATCHES and SEQLENS override the sweep; PROGRAM another mla_decode_split.tile;
# TILEC_ARCHIVE another portable tilec.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/mla-split-probe}
mkdir -p "$out"
exec > >(tee "$out/mla-split-probe.txt") 2>&1
# shellcheck source=scripts/unpack-portable.sh
source "$root/scripts/unpack-portable.sh"
program=${PROGRAM:-$root/samples/mla_decode_split.tile}

# Variants: as written; every loop over the splits unrolled fully (`unroll(num_split)`), to see
# what the combine's dependent loads cost; the partial kernel without its store of O_partial
# (behind a condition no block meets), to see what writing the float32 partial results costs;
# the partial results in float16; the partial results staged through a shared tile (which takes
# the place of the K/V stages after the loop) and written row by row in 16-byte vectors.
cp "$program" "$work/as_written.tile"
sed 's/in serial(num_split)/in unroll(num_split)/' "$program" > "$work/unrolled.tile"
sed 's/^        copy(acc_o, O_partial\[/        if bid > 1000000:\n            copy(acc_o, O_partial[/' \
  "$program" > "$work/no_partial_store.tile"
sed 's/O_partial: Tensor((batch, heads, num_split, dim), accum_dtype)/O_partial: Tensor((batch, heads, num_split, dim), dtype)/' \
  "$program" > "$work/half_partials.tile"
sed -e 's/^        l = alloc_fragment((block_H,), accum_dtype)$/&\n        O_shared = alloc_shared((block_H, dim), accum_dtype)/' \
  -e 's/^        copy(acc_o, O_partial\[\(.*\)\])$/        copy(acc_o, O_shared)\n        copy(O_shared, O_partial[\1])/' \
  "$program" > "$work/staged_store.tile"
# The combine with 256 threads (two elements each) instead of 128: whether more warps per SM
# (more loads in flight) speed it.
sed 's/with Kernel(heads, batch, threads=128)/with Kernel(heads, batch, threads=256)/' "$program" \
  > "$work/combine_256.tile"
# The combine's two loops over the log-sum-exps unrolled completely (not its loop over the
# partial results): the second's loads become the first's (64 splits: 128 scalar loads a
# thread instead of 192), now that the combine has registers for them.
awk 'BEGIN { n = 0 } /for s in serial\(num_split\):/ && n < 2 { sub(/serial/, "unroll"); n++ } { print }' \
  "$program" > "$work/unrolled_lse.tile"
# KV tiles of 32 rows instead of 64 on three or four stages instead of two (the same shared
# memory, about 220 KiB with four): whether loads further ahead speed the partial kernel's loop.
for st in 3 4; do
  sed -e 's/^const block_N = 64$/const block_N = 32/' -e "s/num_stages=2)/num_stages=$st)/" \
    "$program" > "$work/bn32_s$st.tile"
done
combines=${COMBINES:-as_written unrolled}

echo "$("$tilec" --version 2>&1 | head -1); $(nvidia-smi --query-gpu=name,clocks.sm --format=csv,noheader)"
printf '%-16s %6s %5s %6s | %9s %9s %6s %7s | %9s | %8s\n' variant splits batch kv partial_us \
  regs local grid combine_us TFLOP/s
for variant in $combines; do
  for splits in ${SPLITS:-16 32 64 128}; do
    for batch in ${BATCHES:-1 2 4 8}; do
      for kv in ${SEQLENS:-32768}; do
      json=$work/r.json
      "$tilec" bench "$work/$variant.tile" -D num_split="$splits" \
        --shape batch="$batch",seqlen_kv="$kv" --no-flush --warmup 10 --reps 50 --json > "$json"
      python3 - "$json" "$variant" "$splits" "$batch" "$kv" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
k = {x["name"]: x for x in r["kernels"]}
p, c = k["mla_decode_partial"], k["mla_decode_combine"]
batch = int(sys.argv[4])
flop = 2.0 * batch * 128 * int(sys.argv[5]) * (576 + 512)
total = p["us"]["median"] + c["us"]["median"]
grid = "x".join(str(g) for g in p["grid"])
print(f'{sys.argv[2]:<16} {sys.argv[3]:>6} {sys.argv[4]:>5} {sys.argv[5]:>6} | {p["us"]["median"]:9.2f} '
      f'{p["registers"]:9d} {p["local_bytes"]:6d} {grid:>7} | {c["us"]["median"]:9.2f} | '
      f'{flop / total / 1e6:8.1f}')
EOF
      done
    done
  done
done
