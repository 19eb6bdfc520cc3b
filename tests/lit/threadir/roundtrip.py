#!/usr/bin/env python3
"""Thread IR text round trip over every sample and GPU test kernel, at sm_80 and sm_90a.

For each program: `tilec compile X.tile --dump-after=thread-ir --emit ptx` gives the thread IR
text and the PTX; compiling that text as X.thir must give byte-identical PTX and print the same
text again (print -> parse -> print is the identity). Programs that do not compile for an arch
(a diagnostic, as mla_decode at sm_80) are skipped and counted.

    roundtrip.py --tilec build/bin/tilec --root .
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

ARCHS = ["sm_80", "sm_90a"]
VARIANTS = {"flash_attention": [[], ["-D", "causal=True"]]}


def programs(root):
    for d in ("samples", os.path.join("tests", "gpu", "kernels")):
        folder = os.path.join(root, d)
        for name in sorted(os.listdir(folder)):
            if name.endswith(".tile"):
                stem = name[:-5]
                for defines in VARIANTS.get(stem, [[]]):
                    yield os.path.join(folder, name), defines


def compile_one(tilec, src, arch, defines, out):
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([tilec, "compile", src, "--arch", arch, "--emit", "ptx", "-o", out,
                        "--dump-after=thread-ir"] + defines, capture_output=True, text=True)
    return r


def check(tilec, src, arch, defines):
    """Returns (status, message): status is 'ok', 'skip' or 'fail'."""
    stem = os.path.splitext(os.path.basename(src))[0]
    label = f"{os.path.basename(src)} {' '.join(defines)} --arch {arch}".replace("  ", " ")
    with tempfile.TemporaryDirectory() as tmp:
        first = compile_one(tilec, src, arch, defines, os.path.join(tmp, "tile"))
        if first.returncode != 0:
            return "skip", f"{label}: does not compile"
        thir = os.path.join(tmp, stem + ".thir")
        with open(thir, "w") as f:
            f.write(first.stdout)
        second = compile_one(tilec, thir, arch, [], os.path.join(tmp, "thir"))
        if second.returncode != 0:
            return "fail", f"{label}: the dump does not compile:\n{second.stderr[:2000]}"
        if second.stdout != first.stdout:
            return "fail", f"{label}: print -> parse -> print differs"
        with open(os.path.join(tmp, "tile", stem + ".ptx")) as f:
            ptx1 = f.read()
        with open(os.path.join(tmp, "thir", stem + ".ptx")) as f:
            ptx2 = f.read()
        if ptx1 != ptx2:
            return "fail", f"{label}: PTX from the dump differs"
        return "ok", label


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    jobs = [(src, arch, defines) for src, defines in programs(args.root) for arch in ARCHS]
    counts = {"ok": 0, "skip": 0, "fail": 0}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for status, message in pool.map(lambda j: check(args.tilec, *j), jobs):
            counts[status] += 1
            if status != "ok":
                print(f"{status}: {message}")
    print(f"roundtrip: {counts['ok']} identical, {counts['skip']} skipped, "
          f"{counts['fail']} failed")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
