#!/usr/bin/env python3
"""The run half of scripts/bench-attention.sh: every case of .bench-attention/cases.txt (a copy of
tests/bench/attention-cases.txt) at each of its shapes, next to PyTorch's scaled dot-product
attention on its cuDNN and FlashAttention-2 backends, as a markdown table.

For each (case, shape) cell: the case's program (one process, one kernel; it checks its output and
times itself) and the cuDNN peer run back to back, their order alternating from cell to cell, then
the flash peer; then the SM clock, temperature and power are read (the GPU throttles under load,
so only adjacent measurements compare). Peers get the same dtype, causality and shape (laid out
(B, H, S, D), their native layout), the same warm-up and repetition counts and the same
CUDA-event median without an L2 flush. Exits 1 if any case failed to build, launch or check.
"""
import argparse
import os
import statistics
import subprocess
import sys

from bench_common import (add_run_options, begin, clock, emit, fields, fmt, median_ms, ratio,
                          read_text, report, run_case)


def read_cases(path):
    """Cases of an attention-cases.txt: dicts with name, dtype, causal, shapes (B, H, S)."""
    sets, cases = {}, []
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if words[0] == "shapes" and len(words) >= 3:
                sets[words[1]] = [tuple(int(x) for x in s.split("x")) for s in words[2:]]
            elif words[0] == "case" and len(words) >= 5:
                name, dtype, shape_set = words[1:4]
                if dtype not in ("fp16", "bf16"):
                    sys.exit(f"{path}:{lineno}: unknown dtype {dtype}")
                if shape_set not in sets:
                    sys.exit(f"{path}:{lineno}: unknown shape set {shape_set}")
                cases.append({"name": name, "dtype": dtype, "shapes": sets[shape_set]})
            else:
                sys.exit(f"{path}:{lineno}: cannot read: {line.strip()}")
    return cases


def run_tilec(binary, shape, args):
    """Runs one case's program: (TFLOP/s, ms, D, causal, status) with None where it failed."""
    f, status = run_case(binary, shape, args)
    D = int(f["D"]) if "D" in f else None
    causal = f.get("causal") == "1"
    if status == "ok":
        return float(f["tflops"]), float(f["ms"]), D, causal, status
    return None, None, D, causal, status


def describe(binary):
    """D and causality of a case, from a run at the smallest shape."""
    p = subprocess.run([binary, "1", "1", "1", "--warmup", "0", "--reps", "1"],
                       capture_output=True, text=True, timeout=60)
    lines = [l for l in p.stdout.splitlines() if l.startswith("BENCH ")]
    f = fields(lines[-1]) if lines else {}
    return (int(f["D"]), f.get("causal") == "1") if "D" in f else (None, None)


class Peers:
    """SDPA through torch on the cuDNN and flash backends; None where torch is missing."""

    def __init__(self):
        try:
            import torch
            from torch.nn.attention import SDPBackend, sdpa_kernel
            self.torch, self.backends, self.sdpa_kernel = torch, {
                "cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}, sdpa_kernel
            self.error = None
        except Exception as e:  # noqa: BLE001 (torch or CUDA missing: tilec alone still runs)
            self.torch = None
            self.error = f"{type(e).__name__}: {e}"

    def run(self, which, dtype, D, causal, shape, args):
        """(TFLOP/s or None, note) of one SDPA backend."""
        if self.torch is None:
            return None, f"unavailable ({self.error})"
        torch = self.torch
        B, H, S = shape
        try:
            g = torch.Generator(device="cuda").manual_seed(args.seed)
            dt = torch.float16 if dtype == "fp16" else torch.bfloat16
            q, k, v = (torch.rand(B, H, S, D, device="cuda", generator=g, dtype=dt) * 2 - 1
                       for _ in range(3))
            with self.sdpa_kernel(self.backends[which]):
                def fn():
                    return torch.nn.functional.scaled_dot_product_attention(q, k, v,
                                                                            is_causal=causal)
                fn()
                ms = median_ms(torch, fn, args.warmup, args.reps, args.batch)
        except Exception as e:  # noqa: BLE001 (one peer failing must not stop the run)
            return None, f"error: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        finally:
            torch.cuda.empty_cache()
        tflops = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0) / ms / 1e9
        emit(f"PEER peer={which} dtype={dtype} D={D} causal={int(causal)} B={B} H={H} S={S} "
             f"ms={ms:.4f} tflops={tflops:.1f}")
        return tflops, ""


def round_ratios(tilec_runs, cudnn_runs):
    """tilec/cuDNN of a cell: the median of each round's ratio, with the lowest and highest
    where there was more than one round."""
    ratios = [t[0] / c for t, (c, _) in zip(tilec_runs, cudnn_runs) if t[0] and c]
    if not ratios:
        return "-"
    if len(ratios) == 1:
        return f"{ratios[0]:.2f}x"
    return f"{statistics.median_high(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(ap, os.path.join(os.path.dirname(__file__), "..", ".bench-attention"), "BxHxS")
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("BENCH_ROUNDS", "1")),
                    help="run tilec and cuDNN this many times per cell, in alternating order, "
                         "and report medians (BENCH_ROUNDS)")
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit("--rounds must be at least 1")
    bench, cases, override, started = begin("tilec attention benchmark", args, read_cases)

    def read(name, default=""):
        return read_text(bench, name, default)

    peers = Peers()
    if peers.torch is None:
        emit(f"# peers unavailable: {peers.error}")
    else:
        emit(f"# {peers.torch.cuda.get_device_name()}, torch {peers.torch.__version__} "
             f"(CUDA {peers.torch.version.cuda}, cuDNN {peers.torch.backends.cudnn.version()})")

    rows, failed, cell = [], [], 0
    for case in cases:
        name, dtype = case["name"], case["dtype"]
        binary = os.path.join(bench, "bin", name)
        if not os.access(binary, os.X_OK):
            lines = (read(os.path.join("failed", name + ".txt")) or "program missing").splitlines()
            failed.append(f"{name}: FAILED: {lines[-1]}")
            continue
        D, causal = describe(binary)
        if D is None:
            failed.append(f"{name}: FAILED: the program does not run")
            continue
        for shape in override or case["shapes"]:
            shape_text = "x".join(map(str, shape))
            emit(f"## {name} {shape_text}")
            # Each round runs the pair in the order opposite to the round before, so that
            # neither side always runs on the GPU the other has just heated.
            tilec_runs, cudnn_runs = [], []
            for _ in range(args.rounds):
                order = ("tilec", "cudnn") if cell % 2 == 0 else ("cudnn", "tilec")
                cell += 1
                for who in order:
                    if who == "tilec":
                        tilec_runs.append(run_tilec(binary, shape, args))
                    else:
                        cudnn_runs.append(peers.run("cudnn", dtype, D, causal, shape, args))
                if tilec_runs[-1][4].startswith("FAILED"):
                    break
            fla, fla_note = peers.run("flash", dtype, D, causal, shape, args)
            clk = clock()
            emit(f"CLOCK after {name} {shape_text}: {clk}")
            status = next((r[4] for r in tilec_runs if r[4] != "ok"), "ok")
            if status.startswith("FAILED"):
                failed.append(f"{name} {shape_text}: {status}")
            ok_runs = [r for r in tilec_runs if r[4] == "ok"]
            ours = statistics.median_high([r[0] for r in ok_runs]) if ok_runs else None
            ms = statistics.median_high([r[1] for r in ok_runs]) if ok_runs else None
            cud_values = [c for c, _ in cudnn_runs if c]
            cud = statistics.median_high(cud_values) if cud_values else None
            cud_note = next((n for c, n in cudnn_runs if not c), "")
            rows.append([name, f"{dtype} D={D}{' causal' if causal else ''}", shape_text,
                         f"{ms:.4f}" if ms is not None else "-", fmt(ours),
                         fmt(cud) if cud else cud_note, fmt(fla) if fla else fla_note,
                         round_ratios(tilec_runs, cudnn_runs), ratio(ours, fla), clk or "-",
                         status])

    head = ["case", "dtype", "B x H x S", "tilec ms", "tilec TFLOP/s", "cuDNN TFLOP/s",
            "FA2 TFLOP/s", "tilec/cuDNN", "tilec/FA2", "GPU after (SM clock, temp, power)",
            "status"]
    return report("tilec attention benchmark", started,
                  "cuDNN and FA2 are torch.nn.functional.scaled_dot_product_attention on its "
                  "CUDNN_ATTENTION and FLASH_ATTENTION backends, same dtype, causality and "
                  "shape; TFLOP/s count 4 B H S^2 D, half of it causal. tilec and cuDNN ran back "
                  "to back for every row" + (
                      f", {args.rounds} rounds a row in alternating order: TFLOP/s are the "
                      "medians of the rounds, tilec/cuDNN the median of the rounds' ratios "
                      "(lowest-highest)." if args.rounds > 1 else "."),
                  head, rows, failed, args.out)


if __name__ == "__main__":
    sys.exit(main())
