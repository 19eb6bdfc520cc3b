"""Parses a benchmark runner's options (bench_common.add_run_options) from the command line and
checks them as a run does (bench_common.begin), with no cases: prints the run's header, or exits
with begin's message."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.environ["SRCROOT"], "scripts"))
import bench_common  # noqa: E402

ap = argparse.ArgumentParser()
bench_common.add_run_options(ap, default_bench=".", shape_help="shapes")
args = ap.parse_args()
bench_common.begin("bench options", args, lambda path: [])
