#!/usr/bin/env bash
# Issue 10's and 12's rows (attention and MLA, W4A16) in one call of the lent GPU, whose budget
# is short and whose machines come rarely: everything is built here, carried as one archive,
# and run there under timeouts that keep the call within its 10 minutes.
#
#   scripts/issue-rows.sh build   here: the GPU tests (scripts/gpu-test.sh build), issue 10's
#                                 attention cases (bench-attention.sh) and issue 12's W4A16 cases
#                                 (bench-gemm.sh), packed into .portable/issue-rows.tar.xz
#   scripts/issue-rows.sh run     on the GPU machine, with .portable/issue-rows.tar.xz carried:
#                                 attention_gpu (every flash attention and MLA check, with the
#                                 MLA decode and split timings), the attention rows against cuDNN
#                                 at B8 H16 S4096 / 2048 / 1024 and B2 H4 S1000 (five rounds a
#                                 row, medians), dequant_gemm_gpu, and the W4A16
#                                 rows against cuBLAS at M = 16 and 4096 (N = K = 8192); logs in
#                                 $OUT (the lender returns at most 8 files). MLA's A/B builds
#                                 (mla-split-launch-ab.sh build, split64 and decode) run after
#                                 attention_gpu when .gpu/ab or .gpu/ab-decode was packed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
archive=$root/.portable/issue-rows.tar.xz
# run takes ATTENTION and W4A16 (regular expressions over the bench cases) and ATTENTION_SHAPES
# and W4A16_SHAPES to time other rows than the issues' (an A/B of schedule variants);
# ATTENTION_ROUNDS (default 5); W4A16_BATCHES (default 1: a list of BENCH_BATCH values, each a
# run of the W4A16 rows, their logs one after another in bench-gemm.log) and W4A16_ROUNDS
# (default 1: that many times over the list); SKIP_ATTENTION_GPU=1 skips attention_gpu; SASS (a
# list of cubins under .gpu/gen) writes their disassembly to sass.txt.
attention=${ATTENTION:-'^fa_(fp16_d128|fp16_d128_causal|bf16_d64_causal)$'}
attention_shapes=${ATTENTION_SHAPES:-8x16x4096,8x16x2048,8x16x1024,2x4x1000}
w4a16=${W4A16:-'^w4a16_(words_s4|words_s4_chains|postscale_s4_defer|offset_s4_defer|offset_s5_defer|areg)$'}
w4a16_shapes=${W4A16_SHAPES:-16x8192x8192,4096x8192x8192}

case "${1:-}" in
build)
  "$root/scripts/gpu-test.sh" build
  "$root/scripts/bench-attention.sh" build
  BENCH_CASES=$w4a16 "$root/scripts/bench-gemm.sh" build
  mkdir -p "$root/.portable"
  tar -C "$root" -cJf "$archive" .gpu .bench-attention .bench
  ls -l "$archive"
  ;;
run)
  out=${OUT:-$root/.issue-rows}
  mkdir -p "$out"
  tar -C "$root" -xJf "$archive"
  nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv |
    tee "$out/card.txt" || true
  t0=$(date +%s)
  step() { echo "$1 done after $(($(date +%s) - t0)) s" | tee -a "$out/card.txt"; }
  if [ -z "${SKIP_ATTENTION_GPU:-}" ]; then
    # attention_gpu took 205 s on an H100 machine (session 59): 200 s stopped it.
    TIMEOUT_EACH=280 OUT=$out "$root/scripts/gpu-test.sh" run attention_gpu >"$out/attention.log" 2>&1 || true
    step attention_gpu
  fi
  # The W4A16 kernels' correctness, --split-wgmma-chains's included (the bench's row below).
  # (appended to attention.log: the lender returns at most 8 files)
  TIMEOUT_EACH=60 "$root/scripts/gpu-test.sh" run dequant_gemm_gpu >>"$out/attention.log" 2>&1 || true
  step dequant_gemm_gpu
  # A/B builds of MLA (scripts/mla-split-launch-ab.sh build), when they were packed too.
  if [ -d "$root/.gpu/ab" ]; then
    timeout 120 "$root/scripts/mla-split-launch-ab.sh" run 1 >"$out/ab-split.log" 2>&1 || true
    step ab-split
  fi
  if [ -d "$root/.gpu/ab-decode" ]; then
    KERNEL=decode timeout 90 "$root/scripts/mla-split-launch-ab.sh" run 1 >"$out/ab-decode.log" 2>&1 || true
    step ab-decode
  fi
  for cubin in ${SASS:-}; do
    echo "== $cubin" && cuobjdump -sass "$root/.gpu/gen/$cubin" || true
  done >"$out/sass.txt" 2>&1
  BENCH_CASES=$attention BENCH_SHAPES=$attention_shapes BENCH_ROUNDS=${ATTENTION_ROUNDS:-5} \
    OUT=$out timeout 300 "$root/scripts/bench-attention.sh" run >"$out/bench-attention.log" 2>&1 || true
  step bench-attention
  : >"$out/bench-gemm.log"
  for round in $(seq "${W4A16_ROUNDS:-1}"); do
    for batch in ${W4A16_BATCHES:-1}; do
      echo "## round $round, BENCH_BATCH=$batch" >>"$out/bench-gemm.log"
      BENCH_CASES=$w4a16 BENCH_SHAPES=$w4a16_shapes BENCH_REPS=100 BENCH_BATCH=$batch \
        timeout 120 "$root/scripts/bench-gemm.sh" run >>"$out/bench-gemm.log" 2>&1 || true
      step "bench-gemm round $round batch $batch"
    done
  done
  grep -E "^mla|FAIL|fail|passed" "$out/attention.log" | tail -30 || true
  grep -hE "^\| (fa_|w4a16)|^## round" "$out/bench-attention.log" "$out/bench-gemm.log" || true
  ;;
*)
  echo "usage: $0 build | run"
  exit 1
  ;;
esac
