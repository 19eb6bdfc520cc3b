#!/usr/bin/env bash
# Where ptxas puts attention's waits when P@V overlaps the softmax (--overlap-gemms): the
# consumer loop's wgmma issues, waits, mbarrier arrivals and exponentials in SASS order.
#
#   scripts/sass-overlap.sh build   here (ptxas, no GPU needed): flash_attention's PTX with
#                                   --overlap-gemms (and with --fast-math), a copy without the
#                                   loop's `wgmma.wait_group 0`, one with 24/240 registers for
#                                   producer/consumers and one without the CTA fence before
#                                   that wait (below), each assembled into .sass-overlap/*.cubin
#   scripts/sass-overlap.sh run     on the GPU machine (cuobjdump), with .sass-overlap/ carried
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/.sass-overlap
case ${1:-} in
build)
  tilec=${TILEC:-$root/build/bin/tilec}
  rm -rf "$dir" && mkdir -p "$dir/gen" "$dir/fast"
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$dir/gen" --emit ptx --arch sm_90a \
    --overlap-gemms
  "$tilec" compile "$root/samples/flash_attention.tile" -o "$dir/fast" --emit ptx --arch sm_90a \
    --overlap-gemms --fast-math
  ptx=$dir/gen/flash_attention.ptx
  cp "$ptx" "$dir/overlap.ptx"
  cp "$dir/fast/flash_attention.ptx" "$dir/overlap-fast.ptx"
  # The loop's wait for P@V is the second `wgmma.wait_group 0` of the consumers.
  line=$(grep -n 'wgmma.wait_group.sync.aligned 0;' "$ptx" | sed -n 2p | cut -d: -f1)
  sed "${line}d" "$ptx" >"$dir/no-wait.ptx"
  sed -e 's/setmaxnreg.dec.sync.aligned.u32 \t40/setmaxnreg.dec.sync.aligned.u32 \t24/' \
    -e 's/setmaxnreg.inc.sync.aligned.u32 \t232/setmaxnreg.inc.sync.aligned.u32 \t240/' \
    "$ptx" >"$dir/regs240.ptx"
  # The compiler puts a CTA fence before that wait (it keeps ptxas from sinking the softmax
  # below it; the experiments that found it are in docs/results/sass-overlap-pins-2026-12-03.txt,
  # from commit a2b3222 of this script): a copy without the fence shows what it changes.
  grep -v 'fence.acq_rel.cta;' "$dir/overlap-fast.ptx" >"$dir/no-fence.ptx"
  for v in overlap overlap-fast no-wait regs240 no-fence; do
    "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" -arch=sm_90a "$dir/$v.ptx" -o "$dir/$v.cubin"
  done
  ;;
run)
  for v in overlap overlap-fast no-wait regs240 no-fence; do
    echo "== $v (from the first Q@K^T issue on; counts of repeated lines)"
    cuobjdump -sass "$dir/$v.cubin" |
      grep -E 'HGMMA.*gsb0|WARPGROUP.DEPBAR|MUFU.EX2|SYNCS.ARRIVE.TRANS64.A1T0' |
      sed -e 's/^ *\/\*[0-9a-f]*\*\/ *//' -e 's/MUFU.EX2.*/MUFU.EX2/' -e 's/ *;.*//' | uniq -c
  done
  ;;
*)
  echo "usage: $0 build|run" >&2
  exit 2
  ;;
esac
