"""What the benchmark runners (scripts/bench_gemm.py, scripts/bench_attention.py) share: the
raw-line log, the GPU's clock, and reading and formatting measurements."""
import os
import re
import subprocess
import sys
import time


def fields(line):
    """key=value words of a BENCH line (a reason= value runs to the end of the line)."""
    out = {}
    head, _, reason = line.partition(" reason=")
    for w in head.split()[1:]:
        k, _, v = w.partition("=")
        out[k] = v
    if reason:
        out["reason"] = reason.strip()
    return out


def clock():
    """SM clock (MHz), temperature and power now, from nvidia-smi ('' where unavailable)."""
    try:
        p = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,temperature.gpu,power.draw",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True,
                           timeout=20)
        sm, temp, power = (x.strip() for x in p.stdout.splitlines()[0].split(","))
        return f"{sm} MHz, {temp} C, {power} W"
    except Exception:  # noqa: BLE001
        return ""


# Every line printed while the benchmark runs, for the raw section of the report.
RAW = []


def emit(line):
    RAW.append(line)
    print(line, flush=True)


def fmt(x):
    return f"{x:.1f}" if x is not None else "-"


def ratio(a, b):
    return f"{a / b:.2f}x" if a is not None and b else "-"


def median_ms(torch, fn, warmup, reps, batch=1):
    """Median CUDA-event time of `fn` (ms) after `warmup` untimed calls, as the programs time
    (gputest::medianMs): each of `reps` timed runs is `batch` calls back to back between two
    events, counted as their mean."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / batch)
    times.sort()
    return times[len(times) // 2]


def add_run_options(ap, default_bench, shape_help):
    """The options every benchmark runner takes (and their environment variables)."""
    ap.add_argument("--bench", default=default_bench)
    ap.add_argument("--out", help="also write the markdown here")
    ap.add_argument("--cases", default=os.environ.get("BENCH_CASES", ""),
                    help="regular expression: run the cases whose name it matches (BENCH_CASES)")
    ap.add_argument("--shapes", default=os.environ.get("BENCH_SHAPES", ""),
                    help=f"comma list of {shape_help} for every case instead of its own "
                         "(BENCH_SHAPES)")
    ap.add_argument("--warmup", type=int, default=int(os.environ.get("BENCH_WARMUP", "10")))
    ap.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "50")))
    ap.add_argument("--batch", type=int, default=int(os.environ.get("BENCH_BATCH", "1")),
                    help="calls back to back in each timed run, counted as their mean "
                         "(BENCH_BATCH; 1: each call timed alone, its launch latency included)")
    ap.add_argument("--seed", type=int, default=int(os.environ.get("BENCH_SEED", "1")))
    ap.add_argument("--timeout", type=int, default=300, help="seconds per case program")


def read_text(folder, name, default=""):
    """The stripped contents of folder/name, or `default` when it cannot be read."""
    try:
        with open(os.path.join(folder, name)) as f:
            return f.read().strip()
    except OSError:
        return default


def report(title, started, intro, head, rows, failed, out):
    """Prints the table (and what failed); with `out`, also writes it as markdown with the raw
    lines. Returns the exit status: 1 when anything failed."""
    table = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    table += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    print()
    print("\n".join(table))
    if failed:
        print("\nFAILED:\n" + "\n".join("  " + f for f in failed))
    if out:
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with open(out, "w") as f:
            f.write(f"# {title} ({started})\n\n{intro}\n\n")
            f.write("\n".join(table) + "\n")
            if failed:
                f.write("\nFAILED:\n\n" + "\n".join("- " + x for x in failed) + "\n")
            f.write("\n## Raw lines\n\n```\n" + "\n".join(RAW) + "\n```\n")
        print(f"\nwrote {out}")
    return 1 if failed else 0


def begin(title, args, read_cases):
    """Checks the options, reads the bench folder's cases (those --cases selects) and prints the
    run's header lines. Returns (bench folder, cases, shapes overriding the cases' own, start
    time)."""
    if args.reps < 20:
        sys.exit("--reps must be at least 20")
    if not 1 <= args.batch <= 1000:
        sys.exit("--batch must be in [1, 1000]")
    bench = os.path.abspath(args.bench)
    cases = read_cases(os.path.join(bench, "cases.txt"))
    if args.cases:
        cases = [c for c in cases if re.search(args.cases, c["name"])]
    override = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",") if s]
    started = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime())
    emit(f"# {title}, {started}, commit {read_text(bench, 'COMMIT', 'unknown')}, "
         f"{read_text(bench, 'TILEC_VERSION', 'tilec ?')}")
    emit(f"# device: {clock() or 'nvidia-smi unavailable'}; warm-up {args.warmup}, "
         f"median of {args.reps}" + (f" runs of {args.batch} calls back to back" if args.batch > 1
                                     else "") + f", seed {args.seed}")
    return bench, cases, override, started


def run_case(binary, shape, args):
    """Runs a case's program at `shape` with the run's options, echoing its BENCH lines and
    stderr. Returns (the last BENCH line's fields, status): status is "ok", or the reason the
    case failed (timed out, a wrong result, a non-zero exit)."""
    cmd = [binary, *map(str, shape), "--warmup", str(args.warmup), "--reps", str(args.reps),
           "--batch", str(args.batch), "--seed", str(args.seed)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {}, f"FAILED: timed out after {args.timeout} s"
    lines = [l for l in p.stdout.splitlines() if l.startswith("BENCH ")]
    for l in lines:
        emit(l)
    for l in p.stderr.splitlines():
        emit(f"  stderr: {l}")
    f = fields(lines[-1]) if lines else {}
    if p.returncode == 0 and f.get("status") == "ok":
        return f, "ok"
    if "reason" in f:
        return f, f"FAILED: wrong result: {f['reason']}"
    tail = (p.stderr.strip().splitlines() or p.stdout.strip().splitlines() or ["no output"])[-1]
    return f, f"FAILED: exit {p.returncode}: {tail}"
