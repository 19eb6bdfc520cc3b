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
import sys

from bench_common import add_run_options, begin, clock, emit, fmt, ratio, read_text, report, run_case

# KIND -> (input dtype, layout: A then B, 'n' stored as used, 't' stored transposed), as
# tests/bench/gemm_bench.cpp defines the kinds. Peers compute the GEMM alone, without epilogue.
KINDS = {
    "relu": ("fp16", "nn"),
    "bias_gelu": ("bf16", "nt"),
    "tn_scale": ("fp16", "tn"),
    "nt": ("fp16", "nt"),
    "fp8_nt": ("fp8e4m3", "nt"),
    # int4 weights: the peers are the float16 GEMM of the same shape (weights stored N x K).
    "w4a16": ("fp16", "nt"),
    "w4a16_splitk": ("fp16", "nt"),
    "w4a16_words": ("fp16", "nt"),
    "w4a16_tiled": ("fp16", "nt"),
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
    f, status = run_case(binary, shape, args)
    if status == "ok":
        return float(f["tflops"]), float(f["ms"]), status
    return None, None, status


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
            ms = self.p.median_ms(fn, args.warmup, args.reps, args.batch)
        except Exception as e:  # noqa: BLE001 (one peer failing must not stop the run)
            return None, f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        tflops = 2.0 * M * N * K / ms / 1e9
        emit(f"PEER peer={which} kind={kind} dtype={dtype} layout={layout} M={M} N={N} K={K} "
             f"ms={ms:.4f} tflops={tflops:.1f}" + (f" config={note.replace(' ', '_')}" if note else ""))
        return tflops, note


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(ap, os.path.join(os.path.dirname(__file__), "..", ".bench"), "MxNxK")
    args = ap.parse_args()
    bench, cases, override, started = begin("tilec GEMM benchmark", args, read_cases)

    def read(name, default=""):
        return read_text(bench, name, default)

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
    return report("tilec GEMM benchmark", started,
                  "cuBLAS is torch.matmul on the same dtype and storage order (torch._scaled_mm "
                  "with unit scales for fp8; for w4a16 the float16 GEMM of the same shape), the GEMM "
                  "alone without the case's epilogue; "
                  "Triton the tutorial matmul autotuned over the Hopper configurations of "
                  "scripts/gemm_peers.py. tilec and cuBLAS ran back to back for every row.",
                  head, rows, failed, args.out)


if __name__ == "__main__":
    sys.exit(main())
