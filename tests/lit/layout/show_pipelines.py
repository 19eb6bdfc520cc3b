#!/usr/bin/env python3
"""Prints the `pipelines` of layout reports one line per loop, for FileCheck.

usage: show_pipelines.py REPORT.json...
"""
import json
import os
import sys


def at(p):
    return f"{p['line']}:{p['col']}"


for path in sys.argv[1:]:
    report = json.load(open(path))
    for k in report["kernels"]:
        print(f"{os.path.basename(path)} {k['name']}")
        if not k["pipelines"]:
            print("none")
        for p in k["pipelines"]:
            copies = ",".join(f"{at(c)}/{c['buffer']}" for c in p["copies"])
            print(f"  {at(p)} stages={p['stages']}/{p['requested_stages']} {p['schedule']}"
                  f" copies={copies}"
                  f" in_flight={p['gemm_in_flight']} turns={p['consumer_turns']}"
                  f" persistent={p['persistent']}")
            if p["reason"] is not None:
                print(f"  reason: {p['reason']}")
            for c in p["copies_not_ahead"]:
                print(f"  not ahead {at(c)}/{c['buffer']}: {c['reason']}")
            o = p["overlap"]
            if o is None:
                print("  overlap none")
            else:
                before = at(o["waited_before"]) if o["waited_before"] else "end"
                print(f"  overlap rotated={','.join(at(r) for r in o['rotated'])}"
                      f" after={at(o['issued_after'])} before={before}")
            print(f"  summary: {p['summary']}")
