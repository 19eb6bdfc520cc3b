#!/usr/bin/env bash
# Where ptxas puts attention's waits when P@V overlaps the softmax (--overlap-gemms): the
# consumer loop's wgmma issues, waits, mbarrier arrivals and exponentials in SASS order.
#
#   scripts/sass-overlap.sh build   here (ptxas, no GPU needed): flash_attention's PTX with
#                                   --overlap-gemms (and with --fast-math), a copy without the
#                                   loop's `wgmma.wait_group 0`, one with 24/240 registers for
#                                   producer/consumers and four with a construct before that
#                                   wait (below), each assembled into .sass-overlap/*.cubin
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
  # Experiments: what keeps ptxas from sinking the softmax below the wait for P@V. Each puts
  # one construct just before that wait, fed by the row sums (the last two fma before it) where
  # it takes operands: two stores of them to shared memory (byte 163952 of the ring, past its
  # barriers: these kernels are only disassembled, never run), one store predicated on the
  # sums being NaN, a warpgroup's named barrier, or a CTA fence.
  python3 - "$dir/overlap-fast.ptx" "$dir" <<'PY'
import re, sys
src, out = sys.argv[1], sys.argv[2]
lines = open(src).read().split('\n')
waits = [i for i, l in enumerate(lines) if 'wgmma.wait_group.sync.aligned 0;' in l]
w = waits[1]
sums = [re.search(r'fma.rn.f32\s+(%r\d+),', l).group(1) for l in lines[w - 4:w]
        if 'fma.rn.f32' in l][-2:]
base = re.search(r'add.s32\s+%r\d+, (%r\d+), 163888;', '\n'.join(lines[w:w + 4])).group(1)
pins = {
    'pin-store': ' '.join(f'st.shared.f32 [{base}+{163952 + 4 * k}], {r};'
                          for k, r in enumerate(sums)),
    'pin-pred': '{ .reg .pred %pin; setp.nan.f32 %pin, ' + f'{sums[0]}, {sums[1]}; '
                + f'@%pin st.shared.f32 [{base}+163952], {sums[0]};' + ' }',
    'pin-bar': 'bar.sync 9, 128;',
    'pin-fence': 'fence.acq_rel.cta;',
}
for name, text in pins.items():
    edited = list(lines)
    edited[w] = text + '\n' + edited[w]
    open(f'{out}/{name}.ptx', 'w').write('\n'.join(edited))
PY
  for v in overlap overlap-fast no-wait regs240 pin-store pin-pred pin-bar pin-fence; do
    "${CUDA_HOME:-/usr/local/cuda}/bin/ptxas" -arch=sm_90a "$dir/$v.ptx" -o "$dir/$v.cubin"
  done
  ;;
run)
  for v in overlap overlap-fast no-wait regs240 pin-store pin-pred pin-bar pin-fence; do
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
