#!/usr/bin/env python3
"""Every .tile file under samples/ and tests/ compiled for sm_80 and sm_90a up to thread IR
(`--emit layout`): each error it reports must carry its file:line:col. Inputs go to tilec several
at a time (one batch per distinct stem set), so the corpus costs a few process starts.

    locations_corpus.py --tilec build/bin/tilec --root .
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ARCHS = ["sm_80", "sm_90a"]
LOCATED = re.compile(r"^[^:\n]+:\d+:\d+: (error|warning|note): ")


def corpus(root):
    for top in ("samples", "tests"):
        for d, _, names in sorted(os.walk(os.path.join(root, top))):
            for n in sorted(names):
                if n.endswith(".tile"):
                    yield os.path.join(d, n)


def batches(files):
    """Groups of files whose stems differ (their outputs share one directory)."""
    groups = []
    for f in files:
        stem = os.path.splitext(os.path.basename(f))[0]
        for g in groups:
            if stem not in g:
                g[stem] = f
                break
        else:
            groups.append({stem: f})
    return [list(g.values()) for g in groups]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--root", required=True)
    args = ap.parse_args()
    files = list(corpus(args.root))
    unlocated, crashes, errors = [], [], 0
    for arch in ARCHS:
        for batch in batches(files):
            with tempfile.TemporaryDirectory() as out:
                r = subprocess.run([args.tilec, "compile", "--arch", arch, "--emit", "layout",
                                    "-o", out] + batch, capture_output=True, text=True,
                                   errors="replace")
            if r.returncode not in (0, 1):
                crashes.append(f"{arch}: exit {r.returncode} in a batch of {len(batch)}")
            for line in r.stderr.splitlines():
                if "error:" not in line:
                    continue
                errors += 1
                if not LOCATED.match(line):
                    unlocated.append(f"{arch}: {line}")
    for u in unlocated + crashes:
        print(u)
    print(f"locations: {len(files)} files x {len(ARCHS)} arches, {errors} errors, "
          f"{len(unlocated)} without a location, {len(crashes)} crashes")
    return 1 if unlocated or crashes else 0


if __name__ == "__main__":
    sys.exit(main())
