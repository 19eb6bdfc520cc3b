#!/usr/bin/env python3
"""Nsight Compute metrics of kernels side by side, to see where one kernel differs from a peer
that does the same work (tilec's flash attention against cuDNN's, say):

    ncu --set full --kernel-name regex:NAME --launch-count 1 -o A PROGRAM...   (and B for the peer)
    ncu -i A.ncu-rep --page raw --csv > A.csv                                  (and B.csv)
    scripts/ncu-compare.py A.csv B.csv [--match REGEX]

prints one row per metric whose name matches REGEX (by default the ones that tell a compute-bound
kernel's time apart: duration, instructions, issue, eligible warps, pipe utilization, stall
reasons, occupancy and launch shape), one column per kernel (every kernel of every file, in
order), with the unit the report gives. Time units are converted to microseconds so that columns
compare.
"""
import argparse
import csv
import re
import sys

DEFAULT_MATCH = (r"^(gpu__time_duration\.sum|sm__cycles_elapsed\.avg|smsp__cycles_active\.avg"
                 r"|sm__inst_executed\.sum|smsp__inst_executed\.sum|sm__inst_executed_pipe_.*\.sum"
                 r"|smsp__issue_active\.avg\.pct.*|smsp__warps_eligible\.avg\.per_cycle_active"
                 r"|smsp__warps_active\.avg\.per_cycle_active"
                 r"|sm__pipe_.*cycles_active\.avg\.pct_of_peak_sustained_active"
                 r"|smsp__average_warp(s_issue_stalled|_latency_issue_stalled)_.*_per_issue_active\.ratio"
                 r"|sm__warps_active\.avg\.pct_of_peak_sustained_active"
                 r"|launch__(registers_per_thread|shared_mem_per_block.*|grid_size|block_size"
                 r"|occupancy_limit_.*|waves_per_multiprocessor)"
                 r"|dram__bytes\.sum|lts__t_bytes\.sum|sm__throughput\.avg\.pct_of_peak_sustained_elapsed"
                 r"|gpc__cycles_elapsed\.avg\.per_second)$")

TIME_TO_US = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def read_kernels(path):
    """[(label, {metric: (value text, unit)})] for each kernel row of a raw-page CSV."""
    with open(path, newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    header_at = next((i for i, r in enumerate(rows) if r[0] == "ID" and "Kernel Name" in r), None)
    if header_at is None or header_at + 1 >= len(rows):
        sys.exit(f"{path}: no raw page (ncu -i REPORT --page raw --csv)")
    names, units = rows[header_at], rows[header_at + 1]
    out = []
    for r in rows[header_at + 2:]:
        m = {n: (v, u) for n, v, u in zip(names, r, units)}
        kernel = m.get("Kernel Name", ("?", ""))[0]
        out.append((f"{path.rsplit('/', 1)[-1]}:{kernel[:40]}", m))
    return out


def cell(value, unit):
    x = number(value)
    if x is not None and unit in TIME_TO_US:
        return f"{x * TIME_TO_US[unit]:.2f} us"
    return f"{value} {unit}".strip() if value else "-"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="+", help="ncu -i REPORT --page raw --csv output")
    ap.add_argument("--match", default=DEFAULT_MATCH, help="regular expression over metric names")
    args = ap.parse_args()
    kernels = [k for path in args.csv for k in read_kernels(path)]
    if not kernels:
        sys.exit("no kernels in the given files")
    pattern = re.compile(args.match)
    metrics = sorted({n for _, m in kernels for n in m if pattern.search(n)})
    print("| metric | " + " | ".join(label for label, _ in kernels) + " |")
    print("|---|" + "---|" * len(kernels))
    for name in metrics:
        print(f"| {name} | " + " | ".join(cell(*m.get(name, ("", ""))) for _, m in kernels) + " |")
    for extra in ("Block Size", "Grid Size"):
        print(f"| {extra} | " + " | ".join(m.get(extra, ("-", ""))[0] for _, m in kernels) + " |")


if __name__ == "__main__":
    main()
