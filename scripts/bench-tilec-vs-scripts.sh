#!/usr/bin/env bash
# `tilec bench` beside the repository's other benchmarks on the same kernels, in one run on the
# GPU machine: the GEMM benchmark's host programs (scripts/bench-gemm.sh, timed through the
# generated headers with CUDA events, PyTorch's peers beside them) and the GPU tests' own
# timings (scripts/gpu-test.sh). Issue 13 asks that tilec bench agree with them within 5%.
#
#   here:    scripts/build.sh && scripts/portable-tilec.sh && scripts/bench-gemm.sh build &&
#            scripts/gpu-test.sh build
#   there:   OUT=$OUT scripts/bench-tilec-vs-scripts.sh     (carry .portable, .bench, .gpu)
#
# The log goes to stdout and $OUT/bench-tilec.txt. Both sides time back to back without an L2
# flush (as the scripts do), then tilec bench once more with its default flush. SECTIONS picks
# what runs (default "copy gemm memory attention"; attention needs .bench-attention, built by
# scripts/bench-attention.sh build, and compares with scripts/bench_attention.py).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
log=${OUT:-/tmp}/bench-tilec.txt
exec > >(tee "$log") 2>&1
cuda=${CUDA_HOME:-/usr/local/cuda}
export PATH=$cuda/bin:$PATH
work=$(mktemp -d)
tar -C "$work" -xJf "$root/.portable/tilec.tar.xz"
tilec=$work/tilec/bin/tilec
shape4k=M=4096,N=4096,K=4096
reps=${BENCH_REPS:-50}
echo "== $(date -u +%FT%TZ) commit $(cat "$root/.bench/COMMIT" 2>/dev/null)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader

bench() { # FILE ARGS...: tilec bench, back to back and then with the L2 flushed
  echo "-- tilec bench $*"
  "$tilec" bench "$root/$1" "${@:2}" --reps "$reps" --no-flush
  "$tilec" bench "$root/$1" "${@:2}" --reps "$reps" | tail -n +2
}

sections=${SECTIONS:-copy gemm memory attention}
has() { [[ " $sections " == *" $1 "* ]]; }

if has copy; then
echo "== device copy"
"$tilec" bench --copy 1GiB --reps "$reps"
fi

if has gemm; then
echo "== GEMM: scripts/bench-gemm.sh cases at 4096^3 (the tilec column is the kernel through its header)"
python3 "$root/scripts/bench_gemm.py" --bench "$root/.bench" --shapes 4096x4096x4096 \
  --cases '^(relu|relu_128x256x64_s4_t256|tn_scale|nt|fp8_nt|bias_gelu_128x256x64)$' --reps "$reps"
bench samples/gemm_relu.tile --shape $shape4k
bench tests/bench/kernels/gemm_relu_sweep.tile --shape $shape4k -D block_M=128 -D block_N=256 \
  -D block_K=64 -D num_stages=4 -D threads=256
bench tests/bench/kernels/gemm_tn_scale.tile --shape $shape4k --arg alpha=0.5
bench tests/bench/kernels/gemm_nt.tile --shape $shape4k
bench tests/bench/kernels/gemm_fp8.tile --shape $shape4k
bench samples/gemm_bias_gelu.tile --shape $shape4k -D block_N=256 -D block_K=64
fi

if has memory; then
echo "== memory-bound: the GPU tests' own timings, then tilec bench at their sizes"
"$root/scripts/gpu-test.sh" run vector_add_gpu rmsnorm_silu_gpu softmax_gpu 2>&1 | grep -E "RESULT|GB/s|PASS|FAIL"
bench samples/vector_add.tile --shape N=67108864
bench samples/rmsnorm_silu.tile --shape M=65536 --arg eps=1e-6
bench samples/softmax.tile --shape M=65536

fi

if has attention; then
echo "== attention: scripts/bench-attention.sh cases (the tilec column is the kernel through its header)"
python3 "$root/scripts/bench_attention.py" --bench "$root/.bench-attention" --shapes 8x16x4096,8x16x1024 \
  --cases '^(fa_fp16_d128|fa_fp16_d128_causal|fa_bf16_d64_causal)$' --reps "$reps"
for shape in B=8,H=16,S=4096 B=8,H=16,S=1024; do
  bench samples/flash_attention.tile --shape $shape
  bench samples/flash_attention.tile --shape $shape -D causal=True
  bench samples/flash_attention.tile --shape $shape -D causal=True -D D=64 -D dtype=bfloat16
done
bench samples/mla_decode.tile --shape batch=64,seqlen_kv=4096
fi
rm -rf "$work"
