#!/usr/bin/env python3
"""Where a kernel's warps stall, by SASS instruction, from Nsight Compute's source page:

    ncu --set full -k regex:NAME -c 1 -o REPORT PROGRAM...
    ncu -i REPORT.ncu-rep --page source --csv --print-source sass > SASS.csv
    scripts/ncu_stalls.py SASS.csv

prints the share of warp-stall samples per opcode, the instructions executed per opcode (warp
level, all of the launch), the instructions executed grouped by how often their SASS line ran
(once per warp per block, once per loop iteration, ...), and the instructions with the most
samples.
"""
import collections
import csv
import sys


def main():
    rows = list(csv.reader(open(sys.argv[1])))
    header = next(r for r in rows if "Source" in r)
    data = rows[rows.index(header) + 1:]
    samples = header.index("Warp Stall Sampling (All Samples)")
    executed = header.index("Instructions Executed")
    count = lambda r, i: int(r[i] or 0) if len(r) > i and r[i].isdigit() else 0
    total = sum(count(r, samples) for r in data)
    by_op = collections.Counter()
    executed_by_op = collections.Counter()
    for r in data:
        words = r[1].split()
        if words and words[0].startswith("@"):
            words = words[1:]
        if words:
            by_op[words[0].split(".")[0]] += count(r, samples)
            executed_by_op[words[0].split(".")[0]] += count(r, executed)
    print(f"{total} warp-stall samples over {len(data)} SASS instructions")
    print("samples by opcode:")
    for op, n in by_op.most_common(12):
        print(f"  {op:10} {n:7} {100 * n / max(total, 1):5.1f}%")
    all_executed = sum(executed_by_op.values())
    print(f"{all_executed} warp instructions executed; by opcode:")
    for op, n in executed_by_op.most_common(16):
        print(f"  {op:10} {n:11} {100 * n / max(all_executed, 1):5.1f}%")
    by_count = collections.Counter()
    lines_by_count = collections.Counter()
    for r in data:
        n = count(r, executed)
        if n:
            by_count[n] += n
            lines_by_count[n] += 1
    print("instructions executed by how many times their SASS line ran:")
    for n, total_n in sorted(by_count.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {n:9} times: {lines_by_count[n]:5} lines, {total_n:11} "
              f"{100 * total_n / max(all_executed, 1):5.1f}%")
    print("instructions with the most samples (samples, times executed, SASS):")
    for r in sorted(data, key=lambda r: -count(r, samples))[:15]:
        print(f"  {count(r, samples):6} {count(r, executed):9}  {r[1].strip()}")


if __name__ == "__main__":
    main()
