#!/usr/bin/env bash
# Where ptxas puts attention's waits when P@V overlaps the softmax (--overlap-gemms): the
# consumer loop's wgmma issues, waits, mbarrier arrivals and exponentials in SASS order.
#
#   scripts/sass-overlap.sh build   here (ptxas, no GPU needed): flash_attention's PTX with
#                                   --overlap-gemms (and with --fast-math), a copy without the
#                                   loop's `wgmma.wait_group 0`, one with 24/240 registers for
#                                   producer/consumers and one with the row sums stored before
#                                   that wait, each assembled into .sass-overlap/*.cubin
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
  # An experiment, not yet run: the row sums (the last two fma before the wait) stored to shared
  # memory just before it, so that the V slot's release after the wait (a release) keeps the
  # softmax above it. The address is the ring's byte 163952 (past its barriers): the kernel is
  # only disassembled, never run.
  python3 - "$dir/overlap-fast.ptx" "$dir/pin-store.ptx" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split('\n')
waits = [i for i, l in enumerate(lines) if 'wgmma.wait_group.sync.aligned 0;' in l]
w = waits[1]
sums = [re.search(r'fma.rn.f32\s+(%r\d+),', l).group(1) for l in lines[w - 4:w]
        if 'fma.rn.f32' in l][-2:]
base = re.search(r'add.s32\s+%r\d+, (%r\d+), 163888;', '\n'.join(lines[w:w + 4])).group(1)
lines[w] = ' '.join(f'st.shared.f32 [{base}+{163952 + 4 * k}], {r};' for k, r in enumerate(sums)) \
    + '\n' + lines[w]
open(sys.argv[2], 'w').write('\n'.join(lines))
PY
  for v in overlap overlap-fast no-wait regs240 pin-store; do
    "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" -arch=sm_90a "$dir/$v.ptx" -o "$dir/$v.cubin"
  done
  ;;
run)
  for v in overlap overlap-fast no-wait regs240 pin-store; do
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
