#!/usr/bin/env python3
"""Runs tilec over the malformed-input corpus and checks the robustness contract.

For every .tile file under --corpus (helper modules in Inputs/ directories excepted) it runs

    tilec check FILE [ARGS]
    tilec compile FILE -o FRESH_TMP_DIR --emit cubin,ptx,llvm,header,layout [ARGS]

each with a timeout, and reports the file as an offender when a run
  - was killed by a signal or timed out,
  - exited with a status other than 0 or 1,
  - exited with 1 without printing an `error:` diagnostic,
  - printed `internal compiler error` or a sanitizer report,
  - printed an error line not of the form `FILE:LINE:COL: error: ...` or `tilec: error: ...`,
  - (compile) failed but left any file, hidden temporaries included, in its output directory.
Files under a `valid/` directory must also pass `tilec check` (exit 0).

ARGS come from lines `# ARGS: ...` at the top of the file (shell-quoted; `%S` is the file's
directory). Exit status 0 when every file passed, 1 otherwise.
"""
import argparse
import concurrent.futures
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile

ERROR_LINE = re.compile(r"^(.+:\d+:\d+|tilec): error: ")
CARET_LINE = re.compile(r"^[ \t]*\^$")
SANITIZER = re.compile(r"(AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|"
                       r"MemorySanitizer|ThreadSanitizer|: runtime error: )")
EMIT = "cubin,ptx,llvm,header,layout"


def corpus_files(root):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "Inputs")
        out += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".tile")]
    return sorted(out)


def extra_args(path):
    """Arguments from leading `# ARGS:` lines (read as bytes: the file may not be UTF-8)."""
    args = []
    with open(path, "rb") as f:
        for raw in f.read(4096).split(b"\n"):
            line = raw.decode("utf-8", "replace").rstrip("\r")
            if not line.startswith("# ARGS:"):
                break
            text = line[len("# ARGS:"):].replace("%S", os.path.dirname(os.path.abspath(path)))
            args += shlex.split(text)
    return args


def diagnostic_problems(stderr, rc):
    """Problems with the diagnostics printed by one run."""
    problems = []
    if "internal compiler error" in stderr:
        problems.append("internal compiler error")
    if SANITIZER.search(stderr):
        problems.append("sanitizer report")
    lines = stderr.split("\n")
    # A diagnostic may quote its source line, followed by a caret line; quoted source is
    # arbitrary text and is not checked.
    quoted = set()
    for i in range(len(lines) - 1):
        if CARET_LINE.match(lines[i + 1]) and i > 0:
            quoted.add(i)
    errors = 0
    for i, line in enumerate(lines):
        if i in quoted:
            continue
        if ERROR_LINE.match(line):
            errors += 1
        elif "error:" in line:
            problems.append("malformed error line: %r" % line[:200])
    if rc == 1 and errors == 0:
        problems.append("exit status 1 without an error diagnostic")
    return problems


def run_one(cmd, timeout):
    """Returns (rc or None on timeout, stderr text). A run that times out is killed with its
    children (ptxas), which share its process group."""
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, err = p.communicate()
        return None, err.decode("utf-8", "replace")
    return p.returncode, err.decode("utf-8", "replace")


def status_problems(rc, timeout):
    if rc is None:
        return ["timed out after %ss" % timeout]
    if rc < 0:
        return ["killed by signal %d" % -rc]
    if rc not in (0, 1):
        return ["exit status %d" % rc]
    return []


def check_file(tilec, path, timeout, corpus):
    rel = os.path.relpath(path, corpus)
    valid = "valid" in rel.split(os.sep)[:-1]
    args = extra_args(path)
    problems = []

    rc, err = run_one([tilec, "check", path] + args, timeout)
    for p in status_problems(rc, timeout) + (diagnostic_problems(err, rc) if rc in (0, 1) else []):
        problems.append("check: " + p)
    if valid and rc != 0:
        problems.append("check: a valid program was rejected (exit %s)" % rc)
        problems += ["  " + l for l in err.splitlines()[:6]]

    outdir = tempfile.mkdtemp(prefix="tilec-malformed-")
    try:
        rc, err = run_one([tilec, "compile", path, "-o", outdir, "--emit", EMIT] + args, timeout)
        for p in status_problems(rc, timeout) + (diagnostic_problems(err, rc) if rc in (0, 1)
                                                 else []):
            problems.append("compile: " + p)
        if rc != 0:
            left = sorted(os.listdir(outdir))
            if left:
                problems.append("compile: failed but left files behind: %s" % ", ".join(left))
    finally:
        shutil.rmtree(outdir, ignore_errors=True)
    return rel, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tilec", required=True, help="the tilec binary")
    ap.add_argument("--corpus", required=True, help="the corpus directory")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per tilec run")
    ap.add_argument("-j", "--jobs", type=int, default=min(4, os.cpu_count() or 1))
    ap.add_argument("-v", "--verbose", action="store_true", help="list every file")
    opts = ap.parse_args()

    tilec = os.path.abspath(opts.tilec)
    corpus = os.path.abspath(opts.corpus)
    files = corpus_files(corpus)
    if not files:
        print("malformed: no .tile files under %s" % corpus)
        return 1
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
        results = pool.map(lambda f: check_file(tilec, f, opts.timeout, corpus), files)
        for rel, problems in results:
            if problems:
                failed.append(rel)
                print("FAIL: %s" % rel)
                for p in problems:
                    print("    " + p)
            elif opts.verbose:
                print("ok: %s" % rel)
    print("malformed: %d passed, %d failed" % (len(files) - len(failed), len(failed)))
    if failed:
        print("offenders:")
        for rel in failed:
            print("  " + rel)
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
