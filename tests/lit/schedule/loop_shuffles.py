"""Counts the shuffles of each kernel of a thread IR dump inside its first top-level loop and
after it: where defer-row-sums moved a row sum's reduction across threads."""
import re
import sys

kernel, depth, state, counts = None, 0, None, {}
for line in open(sys.argv[1]):
    m = re.match(r"kernel (\w+)\(", line)
    if m:
        kernel, state = m.group(1), "before"
        counts[kernel] = {"before": 0, "in": 0, "after": 0}
        continue
    if kernel is None:
        continue
    if state == "before" and re.match(r"  for ", line):
        state = "in"
    elif state == "in" and re.match(r"  \}$", line.rstrip("\n")):
        state = "after"
    counts[kernel][state] += line.count("shfl_xor")
for k, c in counts.items():
    print(f"{k}: {c['in']} in the loop, {c['after']} after it")
