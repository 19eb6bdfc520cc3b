#!/usr/bin/env python3
"""Compile time of the conformance programs.

Two modes:

  scripts/compile-time.py [--tilec build/bin/tilec] [--baseline old/bin/tilec] [--runs 7]
      every program of samples/ (the conformance programs and more) at sm_80 and sm_90a: the
      best of N runs of `tilec compile --emit ptx` (tilec alone) and `--emit cubin,header`
      (ptxas included when it is installed), in milliseconds, as a Markdown table. With
      --baseline, both compilers are timed in alternation (so that the machine's load affects
      them alike) and each cell reads `baseline -> tilec`.

  scripts/compile-time.py --conformance [--runs 5] [--write docs/results/compile-time.md]
      every ../shared/conformance/*.tile compiled to cubin + header (ptxas included), at sm_90a
      and sm_80: the median of N runs of the whole process, the total over all programs, and
      for the slowest programs the median wall time of each pass (from `--time-passes`). With
      --write, the report replaces the section between the markers in that file (appended the
      first time).
"""
import argparse
import datetime
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- compile-time.py --conformance: begin -->"
END = "<!-- compile-time.py --conformance: end -->"
ROW = re.compile(r"^(\S+)\s+([0-9.]+)\s+[0-9.]+%$")


def once(cmd):
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True)
    return (time.perf_counter() - t) * 1000 if r.returncode == 0 else None


def timed(cmd):
    """Runs `cmd` (a tilec compile with --time-passes): (wall ms, {pass: ms}) or None."""
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    ms = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        return None
    passes = {}
    for line in r.stderr.splitlines():
        m = ROW.match(line.strip())
        if m and m.group(1) != "total":
            passes[m.group(1)] = float(m.group(2))
    return ms, passes


def samples_table(args):
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


def git(*a):
    r = subprocess.run(["git", "-C", ROOT, *a], capture_output=True, text=True)
    return r.stdout.strip() if r.returncode == 0 else "?"


def ptxas_version():
    ptxas = os.environ.get("TILEC_PTXAS") or shutil.which("ptxas") or "/usr/local/cuda/bin/ptxas"
    try:
        out = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return "not found (no cubin: these times exclude ptxas)"
    m = re.search(r"release (\S+),", out)
    return m.group(1) if m else "?"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def conformance_report(args):
    archs = ["sm_90a", "sm_80"]
    programs = sorted(f[:-5] for f in os.listdir(args.dir) if f.endswith(".tile"))
    # results[program][arch] = (median wall ms, {pass: median ms}) or None
    results = {}
    with tempfile.TemporaryDirectory() as out:
        for p in programs:
            results[p] = {}
            for arch in archs:
                runs = []
                for _ in range(args.runs):
                    r = timed([args.tilec, "compile", os.path.join(args.dir, p + ".tile"),
                               "--arch", arch, "--emit", "cubin,header", "-o", out,
                               "--time-passes"])
                    if r is None:
                        break
                    runs.append(r)
                if len(runs) < args.runs:
                    results[p][arch] = None
                    continue
                names = list(runs[0][1])
                passes = {n: statistics.median(r[1].get(n, 0.0) for r in runs) for n in names}
                results[p][arch] = (statistics.median(r[0] for r in runs), passes)
            print(f"{p}: " + ", ".join(
                f"{a} " + ("error" if results[p][a] is None else f"{results[p][a][0]:.0f} ms")
                for a in archs), file=sys.stderr)

        # All of them by one command, one job and one per core (`-j 0`), as a build would.
        together = {}
        files = [os.path.join(args.dir, p + ".tile") for p in programs
                 if results[p]["sm_90a"] is not None]
        for jobs in ["1", "0"]:
            runs = [once([args.tilec, "compile", "-j", jobs, *files, "--arch", "sm_90a",
                          "--emit", "cubin,header", "-o", out]) for _ in range(args.runs)]
            together[jobs] = (None if any(r is None for r in runs)
                              else statistics.median(runs))

    def top(passes, n=3):
        total = sum(passes.values()) or 1.0
        best = sorted(passes.items(), key=lambda kv: -kv[1])[:n]
        return ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in best)

    cmd = "scripts/compile-time.py --conformance --runs {} --write docs/results/compile-time.md"
    lines = [
        BEGIN,
        "## Conformance programs to cubin + header (ptxas included), median of "
        f"{args.runs} runs",
        "",
        f"Measured {datetime.date.today().isoformat()} at commit {git('rev-parse', '--short', 'HEAD')}"
        f" on {os.cpu_count()} cores ({cpu_model()}), ptxas {ptxas_version()}; the time of the "
        "whole `tilec compile X.tile --arch A --emit cubin,header` process, in milliseconds. "
        "Reproduce with",
        "",
        "    " + cmd.format(args.runs),
        "",
        "| program | sm_90a | sm_80 | where sm_90a's time goes (`--time-passes`) |",
        "|---|---|---|---|",
    ]
    totals = {a: 0.0 for a in archs}
    for p in programs:
        cells = []
        for a in archs:
            r = results[p][a]
            cells.append("error" if r is None else f"{r[0]:.0f}")
            if r is not None:
                totals[a] += r[0]
        r = results[p]["sm_90a"]
        lines.append(f"| {p} | " + " | ".join(cells) + f" | {top(r[1]) if r else ''} |")
    lines.append("| **all** | " + " | ".join(f"**{totals[a]:.0f}**" for a in archs) + " | |")
    lines.append("")
    lines.append("`error`: the program does not compile for that target (mla_decode needs more "
                 "shared memory than sm_80 has).")
    lines.append("")
    fmt_ms = lambda v: "error" if v is None else f"{v:.0f} ms"
    lines.append(f"The same sm_90a programs by one command, `tilec compile -j N "
                 f"{{all of them}} --emit cubin,header` (median of {args.runs}): "
                 f"{fmt_ms(together['1'])} with `-j 1`, {fmt_ms(together['0'])} with `-j 0` "
                 f"(one job per core, {os.cpu_count()} here).")
    lines.append("")
    slowest = sorted((p for p in programs if results[p]["sm_90a"]),
                     key=lambda p: -results[p]["sm_90a"][0])[:args.slowest]
    if slowest:
        names = list(results[slowest[0]]["sm_90a"][1])
        lines.append(f"Per pass at sm_90a for the {len(slowest)} slowest, median ms "
                     "(`tilec compile --time-passes`):")
        lines.append("")
        lines.append("| pass | " + " | ".join(slowest) + " |")
        lines.append("|---|" + "---|" * len(slowest))
        for n in names:
            lines.append(f"| {n} | " + " | ".join(
                f"{results[p]['sm_90a'][1].get(n, 0.0):.1f}" for p in slowest) + " |")
        # What the table does not cover: process start, LLVM's target registration, exit.
        lines.append("| (rest of the process) | " + " | ".join(
            f"{results[p]['sm_90a'][0] - sum(results[p]['sm_90a'][1].values()):.1f}"
            for p in slowest) + " |")
        lines.append("")
    lines.append(END)
    report = "\n".join(lines) + "\n"
    if not args.write:
        sys.stdout.write(report)
        return 0
    path = args.write
    text = open(path).read() if os.path.exists(path) else "# Compile time\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + report + ("\n" + tail if tail else "")
    else:
        text = text.rstrip("\n") + "\n\n" + report
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path}", file=sys.stderr)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tilec", default=os.path.join(ROOT, "build", "bin", "tilec"))
    ap.add_argument("--baseline")
    ap.add_argument("--runs", type=int, default=None,
                    help="runs per cell (default: 7 for samples, 5 for --conformance)")
    ap.add_argument("--conformance", action="store_true",
                    help="time the conformance programs to cubin + header, with --time-passes")
    ap.add_argument("--dir", default=os.path.join(os.path.dirname(ROOT), "shared", "conformance"),
                    help="where --conformance finds its programs")
    ap.add_argument("--slowest", type=int, default=3,
                    help="how many of the slowest programs get a per-pass table")
    ap.add_argument("--write", help="with --conformance: the Markdown file to update")
    args = ap.parse_args()
    if args.conformance:
        args.runs = args.runs or 5
        return conformance_report(args)
    args.runs = args.runs or 7
    return samples_table(args)


if __name__ == "__main__":
    sys.exit(main())
