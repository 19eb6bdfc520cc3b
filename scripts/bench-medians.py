#!/usr/bin/env python3
"""Per case, the medians over several runs of scripts/bench-gemm.sh or bench-attention.sh:
reads the table rows (`| case | ... | tilec ms | tilec TFLOP/s | PEER TFLOP/s | ... |
tilec/PEER | ...`, the columns found by the table's header; PEER is cuBLAS or cuDNN) of every
file given (logs or their concatenation) and prints, per case and shape, the number of rows,
the median and range of tilec's ms, of the ratio to the peer of the same row and of tilec's
TFLOP/s, and the median of the peer's TFLOP/s over every row read. Rows after a `## round R,
BENCH_BATCH=N` line (scripts/issue-rows.sh's logs) are counted apart per N.

  scripts/bench-medians.py docs/results/bench-w4a16-2026-12-07-s55-h200.md
  scripts/bench-medians.py docs/results/bench-attention-2026-12-08-s59-r*-h100.md
"""
import statistics
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows, peer = {}, {}
    # Rows without a header above them (as issue-rows.sh prints them) are bench-gemm.sh's.
    name, cols = 'cuBLAS', (4, 5, 6, 9)
    for path in sys.argv[1:]:
        batch = ''
        for line in open(path):
            if line.startswith('## round') and 'BENCH_BATCH=' in line:
                batch = ' batch ' + line.split('BENCH_BATCH=')[1].split()[0]
                continue
            cells = [c.strip() for c in line.split('|')]
            if len(cells) > 2 and cells[1] == 'case':
                cols, name = header_columns(cells)
                continue
            if len(cells) <= max(cols) or cells[1] == '' or cells[1].startswith('-'):
                continue
            try:
                # A ratio cell may carry the rounds' range after it: "0.98x (0.95-1.07)".
                ms, tflops, peer_tflops, ratio = (float(cells[cols[0]]), float(cells[cols[1]]),
                                                  float(cells[cols[2]]),
                                                  float(cells[cols[3]].split()[0].rstrip('x')))
            except (ValueError, IndexError):
                continue  # a failed case's row
            rows.setdefault((cells[1], cells[3], batch), []).append((ms, ratio, tflops))
            peer.setdefault(batch, []).append(peer_tflops)
    for (case, shape, batch), v in rows.items():
        ms, ratio, tflops = (sorted(x[i] for x in v) for i in range(3))
        print(f'{case} {shape}{batch}: {len(v)} rows, {statistics.median(ms):.4f} ms '
              f'({ms[0]:.4f}-{ms[-1]:.4f}), {statistics.median(ratio):.2f}x {name} '
              f'({ratio[0]:.2f}-{ratio[-1]:.2f}), {statistics.median(tflops):.1f} TFLOP/s')
    for batch, p in peer.items():
        print(f'{name}{batch}: {len(p)} rows, median {statistics.median(p):.1f} TFLOP/s '
              f'({min(p):.1f}-{max(p):.1f})')


def header_columns(cells):
    """The indices of tilec's ms and TFLOP/s, the peer's TFLOP/s and tilec/peer in a table's
    header row, and the peer's name (the first TFLOP/s column after tilec's)."""
    ms = cells.index('tilec ms')
    tflops = cells.index('tilec TFLOP/s')
    peer = tflops + 1
    name = cells[peer].removesuffix(' TFLOP/s')
    return (ms, tflops, peer, cells.index('tilec/' + name)), name


if __name__ == '__main__':
    main()
