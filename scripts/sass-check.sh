#!/usr/bin/env bash
# Issue 9's machine-code criterion for the sm_90a builds: TMA loads (UTMALDG) and wgmma (HGMMA;
# QGMMA for float8 operands) in the SASS, no spills and no wgmma serialization warning from ptxas.
#
#   scripts/sass-check.sh build   here (ptxas, no GPU needed): the eight conformance programs as
#                                 written, the tuned GEMM configurations of the benchmark and
#                                 the W4A16 kernels of issue 12,
#                                 compiled to PTX and assembled by ptxas -v into .sass-check/
#   scripts/sass-check.sh run     on the GPU machine (cuobjdump), with .sass-check/ carried:
#                                 per cubin, the counts of UTMALDG, HGMMA, QGMMA, local-memory accesses
#                                 (STL/LDL), R2UR (values moved to uniform registers, e.g. wgmma
#                                 descriptors) and SASS instructions, and ptxas's spill and
#                                 serialization lines; exits 1
#                                 when a program that runs a gemm lacks UTMALDG or HGMMA, or
#                                 any program spills or is serialized.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/.sass-check
conformance=$root/../shared/conformance
[ -d "$conformance" ] || conformance=$root/samples
case ${1:-} in
build)
  tilec=${TILEC:-$root/build/bin/tilec}
  ptxas=${CUDA_HOME:-/usr/local/cuda}/bin/ptxas
  rm -rf "$dir" && mkdir -p "$dir"
  # NAME FILE -D options...: NAME.ptx, NAME.cubin and NAME.ptxas.txt (ptxas -v) in $dir.
  one() {
    local name=$1 file=$2
    shift 2
    mkdir -p "$dir/tmp-$name"
    "$tilec" compile "$file" --arch sm_90a --emit ptx -o "$dir/tmp-$name" "$@"
    mv "$dir/tmp-$name"/*.ptx "$dir/$name.ptx" && rm -rf "$dir/tmp-$name"
    "$ptxas" -arch=sm_90a -v "$dir/$name.ptx" -o "$dir/$name.cubin" >"$dir/$name.ptxas.txt" 2>&1
  }
  for f in "$conformance"/*.tile; do
    one "$(basename "$f" .tile)" "$f"
  done
  sweep=$root/tests/bench/kernels
  one gemm_relu_128x256x64_s4_t256 "$sweep/gemm_relu_sweep.tile" -D block_M=128 -D block_N=256 \
    -D block_K=64 -D num_stages=4 -D threads=256
  one gemm_bias_gelu_128x256x64 "$conformance/gemm_bias_gelu.tile" -D block_N=256 -D block_K=64
  one gemm_tn_scale_128x256x64_s4_t256 "$sweep/gemm_tn_scale.tile" -D block_N=256 \
    -D num_stages=4 -D threads=256
  one gemm_nt_128x256x64_s4_t256 "$sweep/gemm_nt.tile" -D block_N=256 -D num_stages=4 -D threads=256
  one gemm_fp8_128x256x128_s4_t256 "$sweep/gemm_fp8.tile" -D block_N=256 -D num_stages=4 \
    -D threads=256
  # Issue 12's W4A16 kernels: the large-M sample (weights as wgmma's A operand in registers)
  # and the decode kernel on repacked words, in the configuration the benchmark timed.
  one dequant_gemm_w4a16_large "$root/samples/dequant_gemm_w4a16_large.tile"
  one w4a16_words_s4 "$root/tests/gpu/kernels/w4a16_words.tile" -D num_stages=4
  # MLA split as issue 10 times it at batch 1 (64 splits).
  one mla_decode_split_64 "$conformance/mla_decode_split.tile" -D num_split=64
  git -C "$root" rev-parse --short HEAD >"$dir/COMMIT" 2>/dev/null || true
  ls "$dir"/*.cubin | wc -l
  ;;
run)
  echo "# SASS of the sm_90a builds, commit $(cat "$dir/COMMIT" 2>/dev/null || echo unknown)"
  printf '%-36s %8s %8s %8s %8s %8s %8s %s\n' program UTMALDG HGMMA QGMMA STL/LDL R2UR SASS ptxas
  status=0
  for cubin in "$dir"/*.cubin; do
    name=$(basename "$cubin" .cubin)
    sass=$(cuobjdump -sass "$cubin")
    tma=$(grep -c 'UTMALDG' <<<"$sass" || true)
    mma=$(grep -c 'HGMMA' <<<"$sass" || true)
    fp8mma=$(grep -c 'QGMMA' <<<"$sass" || true)
    local_mem=$(grep -cE '\b(STL|LDL)\b' <<<"$sass" || true)
    r2ur=$(grep -c 'R2UR' <<<"$sass" || true)
    instructions=$(grep -cE '^\s+/\*[0-9a-f]{4}\*/' <<<"$sass" || true)
    spills=$(grep -oE '[0-9]+ bytes spill stores, [0-9]+ bytes spill loads' "$dir/$name.ptxas.txt" |
      sort -u | paste -sd';')
    serialized=$(grep -c 'serialized' "$dir/$name.ptxas.txt" || true)
    verdict=ok
    # Every program with a gemm (wgmma in its PTX) must run it on HGMMA or QGMMA, fed by TMA.
    if grep -q 'wgmma.mma_async' "$dir/$name.ptx" &&
      { [ "$tma" -eq 0 ] || [ $((mma + fp8mma)) -eq 0 ]; }; then
      verdict=FAIL
    fi
    if [ "$local_mem" -ne 0 ] || [ "$serialized" -ne 0 ] ||
      grep -qE '[1-9][0-9]* bytes spill' "$dir/$name.ptxas.txt"; then
      verdict=FAIL
    fi
    [ "$verdict" = ok ] || status=1
    printf '%-36s %8s %8s %8s %8s %8s %8s %s%s  %s\n' "$name" "$tma" "$mma" "$fp8mma" "$local_mem" \
      "$r2ur" "$instructions" "$spills" \
      "$([ "$serialized" -ne 0 ] && echo ', wgmma serialized')" "$verdict"
  done
  exit $status
  ;;
*)
  echo "usage: $0 build|run" >&2
  exit 2
  ;;
esac
