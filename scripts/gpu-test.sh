#!/usr/bin/env bash
# GPU tests in two halves, because the GPU machine has no LLVM and this one has no GPU.
#
#   scripts/gpu-test.sh build   here: compile the samples the tests need with build/bin/tilec
#                               and build the test programs into .gpu/ (ignored by git)
#   scripts/gpu-test.sh run [NAME...]
#                               on the GPU machine, with .gpu/ carried there: run every test
#                               program (or those named, e.g. two_gpus_gpu on the two-GPU
#                               machine); the log goes to $OUT/gpu-results.txt when $OUT is set;
#                               SANITIZER=racecheck (or memcheck, synccheck) runs each under
#                               compute-sanitizer and fails on anything it reports;
#                               TILEC_GPU_ONLY=TEXT runs only the cases whose name contains
#                               it (attention_gpu), e.g. mla_split64; TIMEOUT_EACH=SECONDS
#                               stops a program that runs longer and goes on with the next.
#                               The log ends with a summary, one line per program: ok, failed
#                               (with its exit status) or timed out
#
# Each program checks exactness against a CPU reference on fresh random inputs with a poisoned
# output, and times itself next to a device-to-device copy measured in the same run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
gpu=$root/.gpu
cuda=${CUDA_HOME:-/usr/local/cuda}

case "${1:-}" in
build)
  tilec=${TILEC:-$root/build/bin/tilec}
  [ -x "$tilec" ] || { echo "build tilec first (scripts/build.sh)"; exit 1; }
  rm -rf "$gpu" && mkdir -p "$gpu/gen/sm_90a" "$gpu/gen/sm_80" "$gpu/gen/causal" "$gpu/gen/mla" "$gpu/bin"
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/causal" -D causal=True \
    --namespace tile::flash_causal --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/mla_decode.tile" -o "$gpu/gen/mla" --emit cubin,ptx,header,layout
  mkdir -p "$gpu/gen/mla16"
  "$tilec" compile "$root/samples/mla_decode_split.tile" -o "$gpu/gen/mla16" -D num_split=16 \
    --namespace tile::mla_split16 --emit cubin,ptx,header,layout
  mkdir -p "$gpu/gen/mla64"
  "$tilec" compile "$root/samples/mla_decode_split.tile" -o "$gpu/gen/mla64" -D num_split=64 \
    --namespace tile::mla_split64 --emit cubin,ptx,header,layout
  # MLA with the scores split over both consumer warpgroups as the policy says (the schedule
  # before plan-score-warpgroup, still what --no-score-warpgroup builds).
  mkdir -p "$gpu/gen/mla_policy" "$gpu/gen/mla_split_policy"
  "$tilec" compile "$root/samples/mla_decode.tile" -o "$gpu/gen/mla_policy" --no-score-warpgroup \
    --namespace tile::mla_policy --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/mla_decode_split.tile" -o "$gpu/gen/mla_split_policy" \
    --no-score-warpgroup --namespace tile::mla_split_policy --emit cubin,ptx,header,layout
  # MLA persistent (--persistent): each block walks several (batch, head block[, split]) tiles.
  mkdir -p "$gpu/gen/mla_persistent" "$gpu/gen/mla_split_persistent"
  "$tilec" compile "$root/samples/mla_decode.tile" -o "$gpu/gen/mla_persistent" --persistent \
    --namespace tile::mla_persistent --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/mla_decode_split.tile" -o "$gpu/gen/mla_split_persistent" \
    --persistent --namespace tile::mla_split_persistent --emit cubin,ptx,header,layout
  # GEMM samples for both arch paths, in namespaces that can share a test program.
  for sample in gemm_relu gemm_bias_gelu flash_attention softmax rmsnorm_silu mla_decode_split; do
    "$tilec" compile "$root/samples/$sample.tile" -o "$gpu/gen/sm_90a" --arch sm_90a --emit cubin,ptx,header,layout
    # sm_80 machine code does not run on an sm_90 GPU: embed the PTX, which the driver compiles.
    "$tilec" compile "$root/samples/$sample.tile" -o "$gpu/gen/sm_80" --arch sm_80 --embed ptx \
      --namespace "tile::sm80::$sample" --emit cubin,ptx,header,layout
  done
  # GEMMs are persistent by default: their one-block-per-tile form (--no-persistent), gemm_relu as
  # written and gemm_bias_gelu at 128x256x64; attention is not: its persistent form.
  mkdir -p "$gpu/gen/persistent" "$gpu/gen/tiled"
  "$tilec" compile "$root/samples/gemm_relu.tile" -o "$gpu/gen/tiled" --no-persistent \
    --namespace tile::tiled::gemm_relu --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/gemm_bias_gelu.tile" -o "$gpu/gen/tiled" --no-persistent \
    -D block_N=256 -D block_K=64 --namespace tile::tiled::gemm_bias_gelu \
    --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/persistent" --persistent \
    --namespace tile::persistent::flash_attention --emit cubin,ptx,header,layout
  mkdir -p "$gpu/gen/persistent_causal"
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/persistent_causal" \
    --persistent -D causal=True --namespace tile::persistent::flash_causal \
    --emit cubin,ptx,header,layout
  # Attention with the overlap inside a warpgroup (--overlap-gemms: three stages; causal also
  # persistent, on two stages), and with --fast-math (exp2 flushing subnormal results).
  mkdir -p "$gpu/gen/overlap" "$gpu/gen/overlap_causal" "$gpu/gen/fast"
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/overlap" --overlap-gemms \
    -D num_stages=3 --namespace tile::overlap::flash_attention --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/overlap_causal" \
    --overlap-gemms --persistent -D causal=True --namespace tile::overlap::flash_causal \
    --emit cubin,ptx,header,layout
  # The overlap with FlashAttention-3's turns (--overlap-gemms --ping-pong).
  # Head dimension 64: the consumer warpgroups take turns by default there.
  mkdir -p "$gpu/gen/d64" "$gpu/gen/d64_causal"
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/d64" -D D=64 \
    --namespace tile::d64::flash_attention --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/d64_causal" -D D=64 \
    -D causal=True --namespace tile::d64::flash_causal --emit cubin,ptx,header,layout
  # Head dimension 96: K and V in panels of 64-byte swizzled lines.
  mkdir -p "$gpu/gen/d96" "$gpu/gen/d96_causal"
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/d96" -D D=96 \
    --namespace tile::d96::flash_attention --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/d96_causal" -D D=96 \
    -D causal=True --namespace tile::d96::flash_causal --emit cubin,ptx,header,layout
  mkdir -p "$gpu/gen/overlap_pp" "$gpu/gen/overlap_pp_causal"
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/overlap_pp" --overlap-gemms \
    --ping-pong --namespace tile::overlap_pp::flash_attention --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/overlap_pp_causal" \
    --overlap-gemms --ping-pong --persistent -D causal=True \
    --namespace tile::overlap_pp::flash_causal --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$gpu/gen/fast" --fast-math \
    --namespace tile::fast::flash_attention --emit cubin,ptx,header,layout
  # The W4A16 sample in its decode and large-M configurations, and through the sm_80 path.
  w4=$root/samples/dequant_gemm_w4a16.tile
  mkdir -p "$gpu/gen/w4_small" "$gpu/gen/w4_large" "$gpu/gen/w4_sm80"
  "$tilec" compile "$w4" -o "$gpu/gen/w4_small" --namespace tile::w4::small --emit cubin,ptx,header,layout
  "$tilec" compile "$w4" -o "$gpu/gen/w4_large" --namespace tile::w4::large \
    -D block_M=128 -D block_N=128 -D threads=256 --emit cubin,ptx,header,layout
  "$tilec" compile "$w4" -o "$gpu/gen/w4_sm80" --namespace tile::w4::sm80 --arch sm_80 --embed ptx \
    --emit cubin,ptx,header,layout
  "$tilec" compile "$root/samples/dequant_gemm_w4a16_large.tile" -o "$gpu/gen" \
    --emit cubin,ptx,header,layout
  # The words kernel with its k-steps in four accumulator chains (--split-wgmma-chains).
  mkdir -p "$gpu/gen/words_chains"
  "$tilec" compile "$root/tests/gpu/kernels/w4a16_words.tile" -o "$gpu/gen/words_chains" \
    --split-wgmma-chains --namespace tile::words_chains --emit cubin,ptx,header,layout
  # The words kernel with the scales applied after the tensor cores, its groups' waits deferred.
  mkdir -p "$gpu/gen/postscale_defer"
  "$tilec" compile "$root/tests/gpu/kernels/w4a16_words_postscale.tile" -o "$gpu/gen/postscale_defer" \
    --defer-wgmma-waits --namespace tile::postscale_defer --emit cubin,ptx,header,layout
  # The words kernel cut into its stages' four groups, each group's gemm chained in flight.
  mkdir -p "$gpu/gen/split_defer"
  "$tilec" compile "$root/tests/gpu/kernels/w4a16_words_split.tile" -o "$gpu/gen/split_defer" \
    --defer-wgmma-waits --namespace tile::split_defer --emit cubin,ptx,header,layout
  # The weights as 1032 + q, the 1032 taken back by a gemm of a constant tile, waits deferred.
  mkdir -p "$gpu/gen/offset_defer"
  "$tilec" compile "$root/tests/gpu/kernels/w4a16_words_offset.tile" -o "$gpu/gen/offset_defer" \
    --defer-wgmma-waits --namespace tile::offset_defer --emit cubin,ptx,header,layout
  for sample in vector_add softmax rmsnorm_silu warp_reduce; do
    "$tilec" compile "$root/samples/$sample.tile" -o "$gpu/gen" --emit cubin,ptx,header,layout
  done
  for kernel in "$root"/tests/gpu/kernels/*.tile; do
    "$tilec" compile "$kernel" -o "$gpu/gen" --emit cubin,ptx,header,layout
  done
  # The math functions also under --fast-math (math_gpu measures both).
  mkdir -p "$gpu/gen/math_fast"
  "$tilec" compile "$root/tests/gpu/kernels/math_funcs.tile" -o "$gpu/gen/math_fast" --fast-math \
    --namespace tile::math_fast --emit cubin,ptx,header,layout
  # The two-pass RMSNorm also with chunks whose width is not a power of two (C = 160 in 2 or 1).
  for bc in 80 160; do
    mkdir -p "$gpu/gen/rms_c$bc"
    "$tilec" compile "$root/tests/gpu/kernels/rmsnorm_two_pass.tile" -o "$gpu/gen/rms_c$bc" \
      -D block_M=64 -D block_C=$bc --namespace tile::rms_c$bc --emit cubin,ptx,header,layout
  done
  # ... and with its second pass in order, first chunk to last.
  mkdir -p "$gpu/gen/rms_fwd"
  "$tilec" compile "$root/tests/gpu/kernels/rmsnorm_two_pass.tile" -o "$gpu/gen/rms_fwd" \
    -D reverse_second_pass=False --namespace tile::rms_fwd --emit cubin,ptx,header,layout
  # ... and with its row sums across threads in every iteration of the first pass.
  mkdir -p "$gpu/gen/rms_rowsum"
  "$tilec" compile "$root/tests/gpu/kernels/rmsnorm_two_pass.tile" -o "$gpu/gen/rms_rowsum" \
    -D sum_after_loop=False --namespace tile::rms_rowsum --emit cubin,ptx,header,layout
  # Several arches in one header (multi_arch_gpu): both cubins, sm_80 with its PTX, sm_80 alone.
  mkdir -p "$gpu/gen/multi/both" "$gpu/gen/multi/fwd" "$gpu/gen/multi/only80"
  "$tilec" compile "$root/samples/vector_add.tile" -o "$gpu/gen/multi/both" --arch sm_80,sm_90a \
    --namespace tile::multi::both
  "$tilec" compile "$root/samples/vector_add.tile" -o "$gpu/gen/multi/fwd" --arch sm_80+ptx \
    --namespace tile::multi::fwd
  "$tilec" compile "$root/samples/vector_add.tile" -o "$gpu/gen/multi/only80" --arch sm_80 \
    --namespace tile::multi::only80
  # Two shared libraries from one stem with different -D (two_libraries_gpu dlopens them).
  mkdir -p "$gpu/lib" "$gpu/gen/scale_a" "$gpu/gen/scale_b"
  "$tilec" compile "$root/tests/gpu/libs/scale.tile" -o "$gpu/gen/scale_a"
  "$tilec" compile "$root/tests/gpu/libs/scale.tile" -o "$gpu/gen/scale_b" -D factor=3 -D block=256
  for v in a b; do
    g++ -std=c++17 -O2 -Wall -Wextra -fPIC -shared -I"$gpu/gen/scale_$v" -I"$cuda/include" \
      "$root/tests/gpu/libs/scale_lib.cpp" -o "$gpu/lib/libscale_$v.so" -L"$cuda/lib64/stubs" -lcuda
  done
  for src in "$root"/tests/gpu/*_gpu.cpp; do
    name=$(basename "$src" .cpp)
    g++ -std=c++17 -O2 -Wall -Wextra -pthread -I"$gpu/gen" -I"$root/tests/gpu" -I"$cuda/include" \
      "$src" -o "$gpu/bin/$name" -L"$cuda/lib64/stubs" -lcuda -ldl
  done
  # The CMake example (samples/cmake-app) against tilec installed into a prefix.
  cmake --install "$root/build" --prefix "$gpu/prefix" >/dev/null
  cmake -S "$root/samples/cmake-app" -B "$gpu/cmake-app" -G Ninja \
    -DCMAKE_PREFIX_PATH="$gpu/prefix" >/dev/null
  cmake --build "$gpu/cmake-app" >/dev/null
  cp "$gpu/cmake-app/cmake_app" "$gpu/bin/cmake_app"
  git -C "$root" rev-parse --short HEAD > "$gpu/COMMIT" 2>/dev/null || true
  echo "built: $(ls "$gpu/bin" | tr '\n' ' ')"
  ;;
run)
  log=${OUT:-$gpu}/gpu-results.txt
  status=0
  {
    echo "# tilec GPU tests, $(date -u +%Y-%m-%dT%H:%MZ), $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'nvidia-smi unavailable')"
    echo "# commit $(cat "$gpu/COMMIT" 2>/dev/null || echo unknown)"
    shift
    limit=()
    [ -n "${TIMEOUT_EACH:-}" ] && limit=(timeout "$TIMEOUT_EACH")
    # Line-buffered, so that a program stopped by its timeout leaves every line it printed
    # (through a pipe its output would otherwise be lost in 4 KiB blocks).
    command -v stdbuf >/dev/null && limit+=(stdbuf -oL)
    summary=()
    for t in "$gpu"/bin/*; do
      if [ $# -gt 0 ] && [[ " $* " != *" $(basename "$t") "* ]]; then
        continue
      fi
      echo "## $(basename "$t")"
      rc=0
      if [ -n "${SANITIZER:-}" ]; then
        # e.g. SANITIZER=racecheck: shared-memory hazards between threads (the barriers
        # insert-barriers placed), reported as errors.
        extra=()
        [ "$SANITIZER" = racecheck ] && extra=(--racecheck-report hazard)
        ${limit[@]+"${limit[@]}"} compute-sanitizer --tool "$SANITIZER" "${extra[@]}" \
          --error-exitcode 9 "$t" || rc=$?
      else
        ${limit[@]+"${limit[@]}"} "$t" || rc=$?
      fi
      if [ $rc -eq 0 ]; then
        summary+=("$(basename "$t"): ok")
      elif [ $rc -eq 124 ] && [ -n "${TIMEOUT_EACH:-}" ]; then
        summary+=("$(basename "$t"): timed out after ${TIMEOUT_EACH} s")
        status=1
      else
        summary+=("$(basename "$t"): FAILED (exit status $rc)")
        status=1
      fi
    done
    echo "## summary"
    printf '%s\n' ${summary[@]+"${summary[@]}"}
    exit $status
  } 2>&1 | tee "$log"
  ;;
*)
  echo "usage: $0 build|run"; exit 1
  ;;
esac
