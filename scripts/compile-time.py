#!/usr/bin/env python3
"""Compile time of every conformance program (samples/ holds the same programs) at sm_80 and
sm_90a: the best of N runs of `tilec compile --emit ptx` (tilec alone) and `--emit cubin,header`
(ptxas included when it is installed), in milliseconds, as a Markdown table.

With --baseline OTHER_TILEC, both compilers are timed in alternation (so that the machine's load
affects them alike) and each cell reads `baseline -> tilec`.

    scripts/compile-time.py [--tilec build/bin/tilec] [--baseline old/bin/tilec] [--runs 7]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def once(cmd):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True)
    return (time.perf_counter() - t) * 1000 if r.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", default=os.path.join(ROOT, "build", "bin", "tilec"))
    ap.add_argument("--baseline")
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    compilers = ([args.baseline] if args.baseline else []) + [args.tilec]
    samples = sorted(f for f in os.listdir(os.path.join(ROOT, "samples")) if f.endswith(".tile"))
    print("| program | sm_80 ptx | sm_80 cubin+header | sm_90a ptx | sm_90a cubin+header |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as out:
        for f in samples:
            path = os.path.join(ROOT, "samples", f)
            cells = []
            for arch in ["sm_80", "sm_90a"]:
                for emit in ["ptx", "cubin,header"]:
                    best = [None] * len(compilers)
                    for _ in range(args.runs):
                        for i, tilec in enumerate(compilers):
                            ms = once([tilec, "compile", path, "--arch", arch, "--emit", emit,
                                       "-o", out])
                            if ms is not None:
                                best[i] = ms if best[i] is None else min(best[i], ms)
                    cells.append(" -> ".join("error" if b is None else f"{b:.0f}" for b in best))
            print(f"| {f[:-5]} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
