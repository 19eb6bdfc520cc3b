"""What the benchmark runners (scripts/bench_gemm.py, scripts/bench_attention.py) share: the
raw-line log, the GPU's clock, and reading and formatting measurements."""
import subprocess


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
