#!/usr/bin/env python3
"""Compile time of every conformance program (samples/ holds the same programs) at sm_80 and
sm_90a: the best of N runs of `tilec compile --emit cubin,header` (ptxas included when it is
installed) and of `--emit ptx` (tilec alone), in milliseconds, as a Markdown table.

    scripts/compile-time.py [--tilec build/bin/tilec] [--runs 5]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best(cmd, runs):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True)
        times.append(time.perf_counter() - t)
        if r.returncode != 0:
            return None
    return min(times) * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", default=os.path.join(ROOT, "build", "bin", "tilec"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    samples = sorted(f for f in os.listdir(os.path.join(ROOT, "samples")) if f.endswith(".tile"))
    print("| program | sm_80 ptx | sm_80 cubin+header | sm_90a ptx | sm_90a cubin+header |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as out:
        for f in samples:
            path = os.path.join(ROOT, "samples", f)
            cells = []
            for arch in ["sm_80", "sm_90a"]:
                for emit in ["ptx", "cubin,header"]:
                    ms = best([args.tilec, "compile", path, "--arch", arch, "--emit", emit, "-o",
                               out], args.runs)
                    cells.append("error" if ms is None else f"{ms:.0f}")
            print(f"| {f[:-5]} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
