#!/usr/bin/env python3
"""Summarizes a layout picture for FileCheck: it must be well-formed XML (the parser says where
not); prints the panels (from their titles) and the sorted distinct chunk labels and the first
and last thread labels, and fails when the picture has fewer than two fill colours (blank)."""
import re
import sys
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
titles = [t.text for t in root.iter(NS + "text") if t.get("font-size") == "16"]
panels = [re.sub(r"^\S+ / ", "", t).split(",")[0] for t in titles]
labels = [t.text for t in root.iter(NS + "text") if t.get("font-size") == "8"]
chunks = sorted({l for l in labels if re.fullmatch(r"c\d+", l)}, key=lambda s: int(s[1:]))
threads = [l for l in labels if l.startswith("T")]
fills = {r.get("fill") for r in root.iter(NS + "rect")}
print("panels: " + ", ".join(panels))


def thread(label):
    return int(re.match(r"T(\d+)", label).group(1))


last = max(threads, key=thread) if threads else ""
print("labels: " + " ".join(chunks) + "; " + (threads[0] + " " + last if threads else ""))
print(f"fills: {len(fills)}")
sys.exit(0 if len(fills) > 2 else 1)
