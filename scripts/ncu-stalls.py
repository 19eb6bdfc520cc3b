#!/usr/bin/env python3
"""Warp-stall summary of an Nsight Compute source page, per kernel.

On the GPU machine (tests built by scripts/gpu-test.sh build), e.g. MLA split at batch 1:

    TILEC_GPU_ONLY=mla_split64 ncu --kernel-name regex:'mla_decode_(partial|combine)' \\
        --launch-skip 2 --launch-count 2 --set full -o $OUT/mla .gpu/bin/attention_gpu
    ncu -i $OUT/mla.ncu-rep --page source --print-source sass --csv > $OUT/source.csv

then anywhere: scripts/ncu-stalls.py source.csv [TOP]. Prints each kernel's sampled stall
reasons and its TOP instructions by samples (default 25), with their two main reasons.
"""
import csv
import sys


def kernels(rows):
    current = None
    for row in rows:
        if row and row[0] == "Kernel Name":
            current = {"name": row[1], "rows": []}
            yield current
        elif row and row[0] == "Address":
            current["header"] = row
        elif current is not None and row:
            current["rows"].append(row)


def main():
    path = sys.argv[1]
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    for k in list(kernels(rows)):
        col = {name: i for i, name in enumerate(k["header"])}
        reasons = [n for n in k["header"] if n.startswith("stall_") and "Not Issued" not in n]
        samples = col["Warp Stall Sampling (All Samples)"]
        totals = {r: 0 for r in reasons}
        lines = []
        for i, row in enumerate(k["rows"]):
            counts = {r: int(row[col[r]] or 0) for r in reasons}
            for r, v in counts.items():
                totals[r] += v
            lines.append((int(row[samples] or 0), i, row[col["Source"]].strip(), counts))
        total = sum(s for s, *_ in lines)
        print(f"== {k['name']}: {len(lines)} instructions, {total} samples")
        for r, v in sorted(totals.items(), key=lambda x: -x[1])[:10]:
            print(f"  {r:26s} {v:7d} {100 * v / max(total, 1):5.1f}%")
        print(f"  top {top} instructions (samples, index in the listing, SASS, main reasons):")
        for s, i, src, counts in sorted(lines, key=lambda x: -x[0])[:top]:
            main_reasons = sorted(counts.items(), key=lambda x: -x[1])[:2]
            why = ", ".join(f"{r} {v}" for r, v in main_reasons if v)
            print(f"  {s:6d} {i:5d}  {src[:70]:70s} {why}")


if __name__ == "__main__":
    main()
