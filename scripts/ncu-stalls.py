#!/usr/bin/env python3
"""Warp-stall summary of an Nsight Compute source page, per kernel.

On the GPU machine (tests built by scripts/gpu-test.sh build), e.g. MLA split at batch 1:

    TILEC_GPU_ONLY=mla_split64 ncu --kernel-name regex:'mla_decode_(partial|combine)' \\
        --launch-skip 2 --launch-count 2 --set full -o $OUT/mla .gpu/bin/attention_gpu
    ncu -i $OUT/mla.ncu-rep --page source --print-source sass --csv > $OUT/source.csv

then anywhere: scripts/ncu-stalls.py source.csv [TOP] [--cuts I,J,...] [--by-opcode]. Prints each
kernel's sampled stall reasons and its TOP instructions by samples (default 25), with their two
main reasons and their index in the listing; with --cuts, the first kernel's samples summed over
the listing cut at those indices ([0, I), [I, J), ..., to the end), e.g. before, in and after a
loop; with --by-opcode, each kernel's samples summed by opcode (the SASS mnemonic without its
predicate and modifiers: HGMMA, LOP3, ...), with each opcode's two main reasons.
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


def opcode(src):
    """The mnemonic of a SASS line: `@!P0 BRA ...` -> BRA, `HGMMA.64x16x16.F32 ...` -> HGMMA."""
    words = src.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def main():
    args = sys.argv[1:]
    by_opcode = "--by-opcode" in args
    if by_opcode:
        args.remove("--by-opcode")
    cuts = []
    if "--cuts" in args:
        at = args.index("--cuts")
        cuts = [int(x) for x in args[at + 1].split(",")]
        del args[at : at + 2]
    path = args[0]
    top = int(args[1]) if len(args) > 1 else 25
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    for n, k in enumerate(list(kernels(rows))):
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
        if by_opcode:
            print("  samples by opcode (samples, share, main reasons):")
            ops = {}
            for s, _, src, counts in lines:
                o = ops.setdefault(opcode(src), [0, {r: 0 for r in reasons}])
                o[0] += s
                for r, v in counts.items():
                    o[1][r] += v
            for name, (s, counts) in sorted(ops.items(), key=lambda x: -x[1][0]):
                if not s:
                    continue
                main_reasons = sorted(counts.items(), key=lambda x: -x[1])[:2]
                why = ", ".join(f"{r} {v}" for r, v in main_reasons if v)
                print(f"  {name:12s} {s:6d} {100 * s / max(total, 1):5.1f}%  {why}")
        if cuts and n == 0:
            print("  samples by listing range:")
            bounds = [0] + cuts + [len(lines)]
            for a, b in zip(bounds, bounds[1:]):
                part = sum(s for s, *_ in lines[a:b])
                print(f"  [{a:5d}, {b:5d})  {part:6d} {100 * part / max(total, 1):5.1f}%")


if __name__ == "__main__":
    main()
