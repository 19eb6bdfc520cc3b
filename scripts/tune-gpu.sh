#!/usr/bin/env bash
# Issue 13's tuning checks, on the GPU machine, with the tilec of scripts/portable-tilec.sh:
#
#   here:    scripts/build.sh && scripts/portable-tilec.sh
#   there:   OUT=$OUT scripts/tune-gpu.sh           (carry .portable/tilec.tar.xz)
#
# 1. LayerNorm (samples/layernorm.tile, D=768 bf16, M=65536): the copy reference and the kernel
#    as written by tilec bench, then tilec tune over block_M x threads; the header it writes is
#    built into tests/tune/layernorm_tuned.cpp, which checks it against a float64 reference and
#    times it through the header's launch function.
# 2. gemm_relu (tests/bench/kernels/gemm_relu_sweep.tile) at 4096^3: tilec tune over 16
#    configurations, timed with `time`, next to tilec bench of the best configuration found by
#    hand (docs/results.md: 128x256x64, 4 stages, 256 threads).
# 3. gemm_relu.tile as written (its threads fixed at 128) over 18 configurations of block_M,
#    block_N and num_stages, next to tilec bench of the program as written.
# The log goes to stdout and $OUT/tune-gpu.txt; the records and the tuned header to $OUT.
# 4. rmsnorm-two-pass (not in the default): the two-pass RMSNorm+SiLU of issue 9 at M=302400 and
#    C=160, 320, 640 over block_M x block_C x num_stages x threads, next to a copy of X's bytes.
#    RMS_SPACE and RMS_SHAPES replace the space and the shapes.
# 4b. rmsnorm-two-pass-tuned (not in the default): tilec tune of the same kernel over its own
#    @tune space and shapes, and the header it writes built into
#    tests/tune/rmsnorm_two_pass_tuned.cpp (float64 reference at ragged widths, bandwidth at the
#    tuned shapes next to a device copy timed the same way).
# 5. rmsnorm-two-pass-widths (not in the default): the same, with chunk widths that are not
#    powers of two (40, 80, 160 divide C = 160; 80 and 160 divide 320 and 640).
# 6. w4a16 (not in the default): samples/dequant_gemm_w4a16.tile at the decode shape M=16,
#    N=K=8192: tilec bench as written, a copy of the weights' and scales' bytes, tilec tune over
#    W4_SPACE, and Nsight Compute profiles of the kernel as written (sections, and warp-stall
#    samples by SASS instruction through scripts/ncu_stalls.py; W4_DEFS adds -D options, W4_FILE
#    names another kernel of the same signature, e.g. tests/gpu/kernels/w4a16_breg.tile).
# 6b. w4a16-large (not in the default): the W4A16 sample at M=4096 with 128x128 blocks and 256
#    threads (wgmma): tilec bench, the SASS of its synchronization (cuobjdump), and Nsight
#    Compute (sections, warp-stall samples by SASS instruction).
# 7. attention (not in the default): samples/flash_attention.tile (fp16 D128, B8 H16 S4096) by
#    tilec bench, with and without --ping-pong (ATT_FLAGS adds flags to both), and Nsight
#    Compute profiles of the default build (sections, and warp-stall samples by SASS
#    instruction through scripts/ncu_stalls.py).
# 8. rmsnorm-two-pass-profile (not in the default): Nsight Compute profiles (sections, and
#    instructions executed and warp-stall samples by SASS instruction) of the two-pass RMSNorm at
#    M=302400 for each C of RMS_PROFILE_WIDTHS (default 160 640) and each configuration of
#    RMS_PROFILE_CONFIGS (';'-separated lists of -D options, default the test kernel as written).
# SECTIONS picks what runs (default "layernorm gemm gemm-as-written").
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${OUT:-/tmp/tune-gpu}
mkdir -p "$out"
exec > >(tee "$out/tune-gpu.txt") 2>&1
cuda=${CUDA_HOME:-/usr/local/cuda}
export PATH=$cuda/bin:$PATH
work=$(mktemp -d)
tar -C "$work" -xJf "$root/.portable/tilec.tar.xz"
tilec=$work/tilec/bin/tilec
echo "== $(date -u +%FT%TZ) commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader

sections=${SECTIONS:-layernorm gemm gemm-as-written}
# Nsight Compute profiles of one kernel (NAME: the files' name, REGEX: the kernel's) run by
# tilec bench FILE ARGS...: its sections into $out/ncu-NAME.txt, and its warp-stall samples by
# SASS instruction (scripts/ncu_stalls.py) into $out/ncu-NAME-stalls.txt.
ncu_profile() {
  local name=$1 regex=$2
  shift 2
  command -v ncu >/dev/null || return 0
  ncu --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
    --section InstructionStats --section ComputeWorkloadAnalysis -k "regex:$regex" -c 1 \
    "$tilec" bench "$@" --warmup 1 --reps 1 > "$out/ncu-$name.txt" 2>&1
  tail -n 200 "$out/ncu-$name.txt"
  ncu --set full -k "regex:$regex" -c 1 -o "$out/$name" \
    "$tilec" bench "$@" --warmup 1 --reps 1 >/dev/null 2>&1
  ncu -i "$out/$name.ncu-rep" --page source --csv --print-source sass > "$out/$name-sass.csv"
  python3 "$root/scripts/ncu_stalls.py" "$out/$name-sass.csv" | tee "$out/ncu-$name-stalls.txt"
}
has() { [[ " $sections " == *" $1 "* ]]; }

if has layernorm; then
echo "== LayerNorm D=768 bf16 M=65536"
"$tilec" bench --copy 100663296
"$tilec" bench "$root/samples/layernorm.tile" --shape M=65536 --arg eps=1e-5 | tail -n +2
mkdir -p "$work/ln"
/usr/bin/time -f "tune wall %e s" "$tilec" tune "$root/samples/layernorm.tile" \
  --space 'block_M=1,2,4,8,16;threads=128,256' --shapes 'M=65536;M=1024' --arg eps=1e-5 \
  --record "$out/tune-layernorm.json" -o "$work/ln"
cp "$work/ln/layernorm.h" "$out/layernorm-tuned.h"
g++ -std=c++17 -O2 -Wall -Wextra -I"$work/ln" -I"$root/tests/gpu" -I"$cuda/include" \
  "$root/tests/tune/layernorm_tuned.cpp" -o "$work/layernorm_tuned" -L"$cuda/lib64/stubs" -lcuda &&
  "$work/layernorm_tuned"
echo "-- again with the record: nothing is measured twice"
/usr/bin/time -f "tune wall %e s" "$tilec" tune "$root/samples/layernorm.tile" \
  --space 'block_M=1,2,4,8,16;threads=128,256' --shapes 'M=65536;M=1024' --arg eps=1e-5 \
  --record "$out/tune-layernorm.json" | tail -3

fi

if has gemm; then
echo "== gemm_relu 4096^3: 16 configurations"
/usr/bin/time -f "tune wall %e s" "$tilec" tune "$root/tests/bench/kernels/gemm_relu_sweep.tile" \
  --space 'block_M=128,256;block_N=128,256;num_stages=3,4;threads=128,256' -D block_K=64 \
  --shapes 'M=4096,N=4096,K=4096' --record "$out/tune-gemm.json"
echo "-- the best configuration by hand"
"$tilec" bench "$root/tests/bench/kernels/gemm_relu_sweep.tile" --shape M=4096,N=4096,K=4096 \
  -D block_M=128 -D block_N=256 -D block_K=64 -D num_stages=4 -D threads=256 --reps 30 | tail -n +2
fi

if has gemm-as-written; then
echo "== samples/gemm_relu.tile 4096^3 (128 threads as written): 18 configurations"
/usr/bin/time -f "tune wall %e s" "$tilec" tune "$root/samples/gemm_relu.tile" \
  --space 'block_M=64,128,256;block_N=64,128,256;num_stages=3,4' \
  --shapes 'M=4096,N=4096,K=4096' --record "$out/tune-gemm-as-written.json"
echo "-- as written"
"$tilec" bench "$root/samples/gemm_relu.tile" --shape M=4096,N=4096,K=4096 --reps 30 | tail -n +2
fi
# The two-pass RMSNorm at M=302400 and C=160, 320, 640 over the space $1, next to copies of X's
# bytes; the record goes to $OUT/$2.
rms_tune() {
  for C in 160 320 640; do
    "$tilec" bench --copy $((302400 * C * 2)) --reps 30 | tail -n +2
  done
  /usr/bin/time -f "tune wall %e s" "$tilec" tune "$root/tests/gpu/kernels/rmsnorm_two_pass.tile" \
    --space "$1" --shapes "${RMS_SHAPES:-M=302400,C=160;M=302400,C=320;M=302400,C=640}" \
    --arg eps=1e-6 --record "$out/$2"
}
if has rmsnorm-two-pass; then
  echo "== two-pass RMSNorm+SiLU, M=302400"
  rms_tune "${RMS_SPACE:-block_M=16,32,64;block_C=32,64,128;num_stages=3,4;threads=128,256}" \
    tune-rmsnorm-two-pass.json
fi
if has rmsnorm-two-pass-tuned; then
  # The space and shapes of the kernel's @tune: one header for the three widths, built into
  # tests/tune/rmsnorm_two_pass_tuned.cpp (correctness at ragged widths, bandwidth next to a copy).
  echo "== two-pass RMSNorm+SiLU, M=302400: tilec tune's header"
  mkdir -p "$work/rms"
  /usr/bin/time -f "tune wall %e s" "$tilec" tune "$root/tests/gpu/kernels/rmsnorm_two_pass.tile" \
    --arg eps=1e-6 --record "$out/tune-rmsnorm-two-pass-tuned.json" -o "$work/rms"
  cp "$work/rms/rmsnorm_two_pass.h" "$out/rmsnorm-two-pass-tuned.h"
  g++ -std=c++17 -O2 -Wall -Wextra -I"$work/rms" -I"$root/tests/gpu" -I"$cuda/include" \
    "$root/tests/tune/rmsnorm_two_pass_tuned.cpp" -o "$work/rmsnorm_two_pass_tuned" \
    -L"$cuda/lib64/stubs" -lcuda && "$work/rmsnorm_two_pass_tuned"
fi
if has rmsnorm-two-pass-widths; then
  echo "== two-pass RMSNorm+SiLU, M=302400, chunk widths 32-160"
  rms_tune 'block_M=16,32,64;block_C=32,40,64,80,128,160;num_stages=3,4;threads=128' \
    tune-rmsnorm-two-pass-widths.json
fi
if has rmsnorm-two-pass-profile; then
  echo "== two-pass RMSNorm+SiLU, M=302400: Nsight Compute"
  IFS=';' read -r -a rms_configs <<<"${RMS_PROFILE_CONFIGS:-}"
  [ ${#rms_configs[@]} -gt 0 ] || rms_configs=("")
  for C in ${RMS_PROFILE_WIDTHS:-160 640}; do
    for config in "${rms_configs[@]}"; do
      defs=()
      for d in $config; do defs+=(-D "$d"); done
      name=rms-C$C$(printf '%s' "$config" | tr -c 'a-zA-Z0-9' '_' | sed 's/_*$//; s/^_*/_/; s/^_$//')
      echo "-- C=$C ${config:-as written} ($name)"
      ncu_profile "$name" rmsnorm_two_pass "$root/tests/gpu/kernels/rmsnorm_two_pass.tile" \
        "${defs[@]}" --shape M=302400,C=$C --arg eps=1e-6
    done
  done
fi
if has w4a16; then
  echo "== W4A16 M=16 N=K=8192"
  w4=$root/${W4_FILE:-samples/dequant_gemm_w4a16.tile}
  # int4 weights (N K / 2 bytes) and float16 scales (K / 128 x N), read once
  "$tilec" bench --copy $((8192 * 4096 + 64 * 8192 * 2)) --reps 30 | tail -n +2
  "$tilec" bench "$w4" ${W4_DEFS:-} --shape M=16,N=8192,K=8192 --reps 30 | tail -n +2
  # A ragged shape whose scale rows (517 float16) are no multiple of 16 bytes, so the launch
  # takes the kernel's path without TMA, next to the nearest shape that keeps TMA.
  for s in M=333,N=517,K=384 M=336,N=512,K=384; do
    "$tilec" bench "$w4" ${W4_DEFS:-} --shape $s --reps 30 | tail -n +2
  done
  /usr/bin/time -f "tune wall %e s" "$tilec" tune "$w4" ${W4_DEFS:-} \
    --space "${W4_SPACE:-block_N=32,64,128;block_K=128,256;num_stages=2,4;threads=128,256}" \
    --shapes 'M=16,N=8192,K=8192' --record "$out/tune-w4a16.json"
  # shellcheck disable=SC2086 # W4_DEFS are whitespace-separated -D options
  ncu_profile w4a16 w4a16 "$w4" ${W4_DEFS:-} --shape M=16,N=8192,K=8192
fi
if has w4a16-large; then
  # The W4A16 sample at M=4096 in its large configuration (wgmma, dequantized weights in shared
  # memory): tilec bench, the SASS of its loop's synchronization, and Nsight Compute.
  echo "== W4A16 M=4096 N=K=8192, 128x128x128, 256 threads"
  w4=$root/samples/dequant_gemm_w4a16.tile
  w4l=(-D block_M=128 -D block_N=128 -D threads=256)
  "$tilec" bench "$w4" "${w4l[@]}" --shape M=4096,N=8192,K=8192 --reps 30 | tail -n +2
  mkdir -p "$work/w4l"
  "$tilec" compile "$w4" "${w4l[@]}" --emit cubin -o "$work/w4l"
  cuobjdump -sass "$work/w4l/dequant_gemm_w4a16.cubin" >"$out/sass-w4a16-large.txt"
  grep -cE 'HGMMA' "$out/sass-w4a16-large.txt"
  grep -E 'WARPGROUP|DEPBAR|BAR.SYNC|SYNCS' "$out/sass-w4a16-large.txt" |
    sed -e 's/^ *\/\*[0-9a-f]*\*\/ *//' -e 's/ *;.*//' | uniq -c
  ncu_profile w4a16-large w4a16 "$w4" "${w4l[@]}" --shape M=4096,N=8192,K=8192
fi
if has attention; then
  echo "== flash_attention fp16 D128 B8 H16 S4096"
  fa=$root/samples/flash_attention.tile
  for f in "" --ping-pong; do
    # shellcheck disable=SC2086 # ATT_FLAGS are whitespace-separated flags
    "$tilec" bench "$fa" ${ATT_FLAGS:-} $f --shape B=8,H=16,S=4096 --reps 30 | tail -n +2
  done
  # shellcheck disable=SC2086
  ncu_profile attention flash "$fa" ${ATT_FLAGS:-} --shape B=8,H=16,S=4096
fi
rm -rf "$work"
