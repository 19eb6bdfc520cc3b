"""Checks that a layout report (--layout-detail=full) is a valid ownership map: every element of
every fragment is owned, no (thread, slot) holds two elements, and each element has exactly as
many owners as its layout kind replicates it (1, every thread, every thread of its group, or every warp
row of an mma B operand)."""
import json
import sys

failures = 0
checked = 0
for path in sys.argv[1:]:
    report = json.load(open(path))
    for kernel in report["kernels"]:
        for buf in kernel["buffers"]:
            layout = buf["layout"]
            if "elements" not in layout:
                continue
            checked += 1
            kind = layout["kind"]
            expect = {"flat": 1, "row_groups": 1, "replicated": layout["threads"],
                      "group_replicated": layout["threads"] // layout["groups"],
                      "mma_accumulator": 1,
                      "mma_rows": 4 * layout.get("warps_n", 1),
                      "mma_operand_b": layout.get("warps_m", 1)}[kind]
            used = set()
            total = 1
            for d in buf["shape"]:
                total *= d
            if len(layout["elements"]) != total:
                print(f"{path}: {buf['name']}: {len(layout['elements'])} elements listed, expected {total}")
                failures += 1
            for e in layout["elements"]:
                owners = [tuple(o) for o in e["owners"]]
                if len(owners) != expect:
                    print(f"{path}: {buf['name']}{e['index']}: {len(owners)} owners, expected {expect}")
                    failures += 1
                for o in owners:
                    if not (0 <= o[0] < layout["threads"] and 0 <= o[1] < layout["slots_per_thread"]):
                        print(f"{path}: {buf['name']}{e['index']}: owner {o} out of range")
                        failures += 1
                    if o in used:
                        print(f"{path}: {buf['name']}: (thread, slot) {o} holds two elements")
                        failures += 1
                    used.add(o)
print(f"ownership: {checked} fragments checked, {failures} problems")
sys.exit(1 if failures or not checked else 0)
