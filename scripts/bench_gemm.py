#!/usr/bin/env python3
"""The run half of scripts/bench-gemm.sh: every case of .bench/cases.txt (a copy of
tests/bench/gemm-cases.txt) at each of its shapes, next to its peers, as a markdown table.

For each (case, shape) cell: the case's program .bench/bin/CASE (one process, one kernel; it
checks its output and times itself) and the cuBLAS peer run back to back, their order alternating
from cell to cell, then the Triton peer; then the SM clock, temperature and power are read, since
the GPU throttles under sustained load and only adjacent measurements compare. Peers use the same
warm-up and repetition counts and the same CUDA-event median, with no L2 flush, as the programs.
Prints raw lines (BENCH from the programs, PEER, CLOCK) as it goes, then the table; exits 1 if any
case failed to build, launch or check.
"""
import argparse
import os
import re
import subprocess
import sys
import time

from bench_common import RAW, clock, emit, fields, fmt, ratio

# KIND -> (input dtype, layout: A then B, 'n' stored as used, 't' stored transposed), as
# tests/bench/gemm_bench.cpp defines the kinds. Peers compute the GEMM alone, without epilogue.
KINDS = {
    "relu": ("fp16", "nn"),
    "bias_gelu": ("bf16", "nt"),
    "tn_scale": ("fp16", "tn"),
    "nt": ("fp16", "nt"),
    "fp8_nt": ("fp8e4m3", "nt"),
}


def read_cases(path):
    """Cases of a gemm-cases.txt: dicts with name, kind, optional (a `try` line), shapes."""
    sets, cases = {}, []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if words[0] == "shapes" and len(words) >= 3:
                sets[words[1]] = [tuple(int(x) for x in s.split("x")) for s in words[2:]]
            elif words[0] in ("case", "try") and len(words) >= 5:
                name, kind, shape_set = words[1:4]
                if kind not in KINDS:
                    sys.exit(f"{path}:{lineno}: unknown kind {kind}")
                if shape_set not in sets:
                    sys.exit(f"{path}:{lineno}: unknown shape set {shape_set}")
                cases.append({"name": name, "kind": kind, "optional": words[0] == "try",
                              "shapes": sets[shape_set]})
            else:
                sys.exit(f"{path}:{lineno}: cannot read: {line.strip()}")
    return cases


def run_tilec(binary, shape, args):
    """Runs one case's program; returns (TFLOP/s or None, ms or None, status text)."""
    M, N, K = shape
    cmd = [binary, str(M), str(N), str(K), "--warmup", str(args.warmup), "--reps", str(args.reps),
           "--seed", str(args.seed)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"FAILED: timed out after {args.timeout} s"
    lines = [l for l in p.stdout.splitlines() if l.startswith("BENCH ")]
    for l in lines:
        emit(l)
    for l in p.stderr.splitlines():
        emit(f"  stderr: {l}")
    if p.returncode == 0 and lines and fields(lines[-1]).get("status") == "ok":
        f = fields(lines[-1])
        return float(f["tflops"]), float(f["ms"]), "ok"
    if lines and "reason" in fields(lines[-1]):
        return None, None, f"FAILED: wrong result: {fields(lines[-1])['reason']}"
    tail = (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or ["no output"])[-1]
    return None, None, f"FAILED: exit {p.returncode}: {tail}"


class Peers:
    """cuBLAS and Triton on the GPU through torch; None where torch is missing."""

    def __init__(self):
        try:
            import gemm_peers
            self.p = gemm_peers
            self.error = None
        except Exception as e:  # noqa: BLE001 (torch or CUDA missing: tilec alone still runs)
            self.p = None
            self.error = f"{type(e).__name__}: {e}"

    def release(self):
        """Returns the peers' cached device memory, so that a case's program finds it free."""
        if self.p is not None:
            self.p.torch.cuda.empty_cache()

    def run(self, which, kind, shape, args):
        """(TFLOP/s or None, note) of one peer on the case's dtype and storage order."""
        if self.p is None:
            return None, f"unavailable ({self.error})"
        dtype, layout = KINDS[kind]
        M, N, K = shape
        try:
            a, b = self.p.operands(dtype, layout, M, N, K, seed=args.seed)
            note = ""
            if which == "cublas":
                fn = self.p.cublas_fn(dtype, a, b)
                fn()
            else:
                fn = self.p.triton_fn(dtype, a, b)
                got = fn()  # autotunes on the first call for this shape and storage order
                ok, err = self.p.agrees(got, self.p.cublas_fn(dtype, a, b)(), dtype)
                note = self.p.triton_config(a, b)
                if not ok:
                    return None, f"wrong result (rel. err {err:.1e} against cuBLAS)"
            ms = self.p.median_ms(fn, args.warmup, args.reps)
        except Exception as e:  # noqa: BLE001 (one peer failing must not stop the run)
            return None, f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        tflops = 2.0 * M * N * K / ms / 1e9
        emit(f"PEER peer={which} kind={kind} dtype={dtype} layout={layout} M={M} N={N} K={K} "
             f"ms={ms:.4f} tflops={tflops:.1f}" + (f" config={note.replace(' ', '_')}" if note else ""))
        return tflops, note


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default=os.path.join(os.path.dirname(__file__), "..", ".bench"))
    ap.add_argument("--out", help="also write the markdown here")
    ap.add_argument("--cases", default=os.environ.get("BENCH_CASES", ""),
                    help="regular expression: run the cases whose name it matches (BENCH_CASES)")
    ap.add_argument("--shapes", default=os.environ.get("BENCH_SHAPES", ""),
                    help="comma list of MxNxK for every case instead of its own (BENCH_SHAPES)")
    ap.add_argument("--warmup", type=int, default=int(os.environ.get("BENCH_WARMUP", "10")))
    ap.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "50")))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("BENCH_SEED", "1")))
    ap.add_argument("--timeout", type=int, default=300, help="seconds per case program")
    args = ap.parse_args()
    if args.reps < 20:
        sys.exit("--reps must be at least 20")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

    bench = os.path.abspath(args.bench)
    cases = read_cases(os.path.join(bench, "cases.txt"))
    if args.cases:
        cases = [c for c in cases if re.search(args.cases, c["name"])]
    override = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",") if s]

    def read(name, default=""):
        try:
            with open(os.path.join(bench, name)) as f:
                return f.read().strip()
        except OSError:
            return default

    started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    emit(f"# tilec GEMM benchmark, {started}, commit {read('COMMIT', 'unknown')}, "
         f"{read('TILEC_VERSION', 'tilec ?')}")
    emit(f"# device: {clock() or 'nvidia-smi unavailable'}; warm-up {args.warmup}, "
         f"median of {args.reps}, seed {args.seed}")
    peers = Peers()
    if peers.p is None:
        emit(f"# peers unavailable: {peers.error}")
    else:
        torch, triton = peers.p.torch, peers.p.triton
        emit(f"# {torch.cuda.get_device_name()}, torch {torch.__version__} "
             f"(CUDA {torch.version.cuda}), triton {getattr(triton, '__version__', 'unavailable')}")

    rows, failed, cell = [], [], 0
    for case in cases:
        name, kind = case["name"], case["kind"]
        binary = os.path.join(bench, "bin", name)
        why_not_built = read(os.path.join("failed", name + ".txt"))
        for shape in override or case["shapes"]:
            shape_text = "x".join(map(str, shape))
            emit(f"## {name} {shape_text}")
            if os.access(binary, os.X_OK):
                order = ("tilec", "cublas") if cell % 2 == 0 else ("cublas", "tilec")
            else:
                order = ("cublas",)
            cell += 1
            result = {}
            for who in order:
                if who == "tilec":
                    result["tilec"] = run_tilec(binary, shape, args)
                else:
                    result["cublas"] = peers.run("cublas", kind, shape, args)
            result["triton"] = peers.run("triton", kind, shape, args)
            peers.release()
            clk = clock()
            emit(f"CLOCK after {name} {shape_text}: {clk}")
            if "tilec" in result:
                ours, ms, status = result["tilec"]
            else:
                lines = why_not_built.splitlines() or ["program missing"]
                reason = next((l for l in lines if "error" in l), lines[-1]).strip()
                reason = reason.replace(os.path.dirname(bench) + os.sep, "")
                ours, ms = None, None
                status = ("not supported yet (try case): " if case["optional"] else "FAILED: ") \
                    + reason
            if status.startswith("FAILED"):
                failed.append(f"{name} {shape_text}: {status}")
            cub, cub_note = result["cublas"]
            tri, tri_note = result["triton"]
            rows.append([name, f"{KINDS[kind][0]} {KINDS[kind][1]}", shape_text,
                         f"{ms:.4f}" if ms is not None else "-", fmt(ours), fmt(cub) if cub else cub_note,
                         fmt(tri) if tri else tri_note, tri_note if tri else "",
                         ratio(ours, cub), ratio(ours, tri), clk or "-", status])

    head = ["case", "dtype layout", "M x N x K", "tilec ms", "tilec TFLOP/s", "cuBLAS TFLOP/s",
            "Triton TFLOP/s", "Triton config", "tilec/cuBLAS", "tilec/Triton", "GPU after (SM clock, temp, power)",
            "status"]
    table = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    table += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    print()
    print("\n".join(table))
    if failed:
        print("\nFAILED:\n" + "\n".join("  " + f for f in failed))
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# tilec GEMM benchmark ({started})\n\n")
            f.write("cuBLAS is torch.matmul on the same dtype and storage order (torch._scaled_mm "
                    "with unit scales for fp8), the GEMM alone without the case's epilogue; "
                    "Triton the tutorial matmul autotuned over the Hopper configurations of "
                    "scripts/gemm_peers.py. tilec and cuBLAS ran back to back for every row.\n\n")
            f.write("\n".join(table) + "\n")
            if failed:
                f.write("\nFAILED:\n\n" + "\n".join("- " + x for x in failed) + "\n")
            f.write("\n## Raw lines\n\n```\n" + "\n".join(RAW) + "\n```\n")
        print(f"\nwrote {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
