#!/usr/bin/env python3
"""Golden PTX: compiles every program of samples/, ../shared/conformance/ and tests/gpu/kernels/
(and the variants in VARIANTS: -D switches, options) for each arch in ARCHS and compares the PTX (or, where compilation fails, the diagnostics) with the recorded
golden files in tests/golden/ptx/.

Goldens are keyed by the SHA-256 of the source (manifest.json), so byte-identical programs in
the two folders share one golden and a program that changes has no golden until it is recorded
again. Refactorings must leave every golden unchanged; a commit that changes code generation on
purpose re-records them with --update and says why.

    golden_ptx.py --tilec build/bin/tilec            # check
    golden_ptx.py --tilec build/bin/tilec --add      # check, and record programs without a golden
    golden_ptx.py --tilec build/bin/tilec --update   # re-record
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

ARCHS = ["sm_80", "sm_90a"]
# Compile-time switches and options whose code paths the plain programs do not reach, each with
# the arches where it changes the code (--persistent: warp-specialized kernels, sm_90a only).
VARIANTS = {"flash_attention": [(["-D", "causal=True"], ARCHS), (["--persistent"], ["sm_90a"])],
            "mla_decode_split": [(["--persistent"], ["sm_90a"])]}
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(HERE, "ptx")


def programs():
    dirs = [("samples", os.path.join(ROOT, "samples")),
            ("conformance", os.path.join(ROOT, "..", "shared", "conformance")),
            ("gpu-kernels", os.path.join(ROOT, "tests", "gpu", "kernels"))]
    for label, d in dirs:
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith(".tile"):
                yield label, os.path.join(d, name)


def compile_one(tilec, path, arch, defines):
    """Returns (suffix, text): ('ptx', the PTX) or ('err', exit status and diagnostics)."""
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([tilec, "compile", path, "--arch", arch, "--emit", "ptx", "-o", out]
                           + defines, capture_output=True, text=True)
        stem = os.path.splitext(os.path.basename(path))[0]
        if r.returncode == 0:
            with open(os.path.join(out, stem + ".ptx")) as f:
                return "ptx", f.read()
        # Diagnostics name the file by the path given: keep only its base name.
        return "err", f"exit {r.returncode}\n" + r.stderr.replace(path, os.path.basename(path))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tilec", required=True)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--add", action="store_true",
                    help="record goldens for the programs that have none (new programs) and "
                    "check the others; never re-records an existing golden")
    args = ap.parse_args()
    manifest_path = os.path.join(GOLDEN, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path) and not args.update:
        with open(manifest_path) as f:
            manifest = json.load(f)
    new_manifest = {}
    failures, checked, added = [], 0, []
    for label, path in programs():
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        stem = os.path.splitext(os.path.basename(path))[0]
        key = manifest.get(digest) if not args.update else new_manifest.get(digest, stem)
        record = args.update
        if key is None and args.add:
            if stem in manifest.values() or stem in new_manifest.values():
                failures.append(f"{label}/{stem}.tile: changed since its golden was recorded; "
                                "--add records only new programs (re-record with --update)")
                continue
            key, record = stem, True
            added.append(f"{label}/{stem}.tile")
        if key is None:
            failures.append(f"{label}/{stem}.tile: no golden for this source (sha256 {digest[:12]});"
                            " record one with --add")
            continue
        new_manifest[digest] = key
        variants = [("", [], ARCHS)] + [("." + "_".join(d.lstrip("-") for d in v if d != "-D")
                                         .replace("=", "_"), v, arches)
                                        for v, arches in VARIANTS.get(stem, [])]
        for tag, defines, arch in ((t, d, a) for t, d, arches in variants for a in arches):
            suffix, text = compile_one(args.tilec, path, arch, defines)
            golden = os.path.join(GOLDEN, f"{key}{tag}.{arch}.{suffix}")
            checked += 1
            if record:
                os.makedirs(GOLDEN, exist_ok=True)
                with open(golden, "w") as f:
                    f.write(text)
                continue
            if not os.path.exists(golden):
                failures.append(f"{label}/{stem}.tile {' '.join(defines)} --arch {arch}: produced {suffix}, but there "
                                f"is no golden {os.path.relpath(golden, ROOT)}")
                continue
            with open(golden) as f:
                want = f.read()
            if want != text:
                a, b = want.splitlines(), text.splitlines()
                line = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]),
                            min(len(a), len(b)))
                failures.append(f"{label}/{stem}.tile {' '.join(defines)} --arch {arch}: differs from "
                                f"{os.path.relpath(golden, ROOT)} at line {line + 1}:\n"
                                f"  golden: {a[line] if line < len(a) else '<end>'}\n"
                                f"  now:    {b[line] if line < len(b) else '<end>'}")
    if args.update:
        with open(manifest_path, "w") as f:
            json.dump(new_manifest, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"recorded {checked} goldens")
        return 0
    if added:
        with open(manifest_path, "w") as f:
            json.dump(new_manifest, f, indent=1, sort_keys=True)
            f.write("\n")
        print("golden: recorded new programs: " + ", ".join(added))
    for msg in failures:
        print("golden: " + msg)
    print(f"golden: {checked} compilations checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
