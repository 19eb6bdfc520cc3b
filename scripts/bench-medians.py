#!/usr/bin/env python3
"""Per case, the medians over several runs of scripts/bench-gemm.sh: reads the table rows
(`| case | ... | tilec ms | tilec TFLOP/s | cuBLAS TFLOP/s | ... | tilec/cuBLAS | ...`) of every
file given (logs or their concatenation) and prints, per case and shape, the number of rows,
the median and range of tilec's ms and of the ratio to the cuBLAS of the same row, and the
median of cuBLAS's TFLOP/s over every row read. Rows after a `## round R, BENCH_BATCH=N` line
(scripts/issue-rows.sh's logs) are counted apart per N.

  scripts/bench-medians.py docs/results/bench-w4a16-2026-12-07-s55-h200.md
"""
import statistics
import sys


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    rows, peer = {}, {}
    for path in sys.argv[1:]:
        batch = ''
        for line in open(path):
            if line.startswith('## round') and 'BENCH_BATCH=' in line:
                batch = ' batch ' + line.split('BENCH_BATCH=')[1].split()[0]
                continue
            cells = [c.strip() for c in line.split('|')]
            if len(cells) < 11 or cells[1] in ('case', '') or cells[1].startswith('-'):
                continue
            try:
                ms, cublas, ratio = float(cells[4]), float(cells[6]), float(cells[9].rstrip('x'))
            except ValueError:
                continue  # a failed case's row
            rows.setdefault((cells[1], cells[3], batch), []).append((ms, ratio))
            peer.setdefault(batch, []).append(cublas)
    for (case, shape, batch), v in rows.items():
        ms = sorted(x[0] for x in v)
        ratio = sorted(x[1] for x in v)
        print(f'{case} {shape}{batch}: {len(v)} rows, {statistics.median(ms):.4f} ms '
              f'({ms[0]:.4f}-{ms[-1]:.4f}), {statistics.median(ratio):.2f}x cuBLAS '
              f'({ratio[0]:.2f}-{ratio[-1]:.2f})')
    for batch, p in peer.items():
        print(f'cuBLAS{batch}: {len(p)} rows, median {statistics.median(p):.1f} TFLOP/s '
              f'({min(p):.1f}-{max(p):.1f})')


if __name__ == '__main__':
    main()
