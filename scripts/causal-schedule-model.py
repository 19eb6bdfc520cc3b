#!/usr/bin/env python3
"""What block order could give causal attention, by a model (no GPU).

Greedy list scheduling: SMS SMs, one block each; blocks start in the given order as SMs free
up; a block of query-block index m (0 .. X-1) costs its m + 1 iterations plus OVERHEAD (its
prologue and epilogue, in iterations). Prints, for X query blocks and P heads x batches, the
makespan of each order as a fraction of the ideal (total cost / SMS):

  launch   the grid's launch order (m fastest), as the GPU starts blocks
  sectionK longest first in sections of G = ceil(K * SMS / X) rows (heads): each section
           walked from its heaviest query block down, its G rows together
           (FlashAttention-3's longest-processing-time order; docs/results.md, 2026-12-06)

    scripts/causal-schedule-model.py [--sms 132] [--rows 128] [--overhead 1]
"""
import argparse
import heapq


def makespan(costs, sms):
    free = [0.0] * sms
    for c in costs:
        heapq.heappush(free, heapq.heappop(free) + c)
    return max(free)


def launch_order(x, rows, overhead):
    return [m + 1 + overhead for _ in range(rows) for m in range(x)]


def sections(x, rows, overhead, g):
    out = []
    for first in range(0, rows, g):
        n = min(g, rows - first)
        out += [m + 1 + overhead for m in reversed(range(x)) for _ in range(n)]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sms", type=int, default=132)
    ap.add_argument("--rows", type=int, default=128, help="heads x batches (B8 H16: 128)")
    ap.add_argument("--overhead", type=float, default=1.0)
    a = ap.parse_args()
    print(f"{'X (S/128)':>9} {'launch':>8}" + "".join(f" {'section' + str(k):>9}" for k in (1, 2, 4, 8)))
    for x in (32, 16, 8, 4):
        costs = launch_order(x, a.rows, a.overhead)
        ideal = sum(costs) / a.sms
        row = f"{x:>9} {ideal / makespan(costs, a.sms):8.3f}"
        for k in (1, 2, 4, 8):
            g = max(1, -(-k * a.sms // x))
            row += f" {ideal / makespan(sections(x, a.rows, a.overhead, g), a.sms):9.3f}"
        print(row)


if __name__ == "__main__":
    main()
