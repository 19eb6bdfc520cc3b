"""A trace as a patched kernel would write it, for `trace_timeline.py report --stages`: warp 0
of blocks 0 and 1, four stages each (the sites' kinds from SITES.json)."""
import json
import struct
import sys

meta = json.load(open(sys.argv[1]))
kind = {}
for i, site in enumerate(meta['sites']):
    kind.setdefault(site['kind'], i)
wgmma = next(k for k in kind if k.startswith('wgmma') and k.endswith(':begin'))[:-len('begin')]
words = [0] * (meta['blocks'] * meta['warps'] * meta['max_events'] * 2)
for block in range(2):
    t = 1000
    events = [(kind['entry'], t), (kind['entry_ns'], 500000 + 300 * block)]
    for stage in range(4):
        t += 50
        events.append((kind['mbar_wait:begin'], t))
        t += 3000 if stage == 0 else 100
        events.append((kind['mbar_wait:end'], t))
        t += 1200
        events.append((kind[wgmma + 'begin'], t))
        t += 500
        events.append((kind[wgmma + 'end'], t))
    t += 400
    events += [(kind['ret'], t), (kind['ret_ns'], 518000 + 10 * block)]
    base = block * meta['warps'] * meta['max_events'] * 2
    for e, (site, clock) in enumerate(events):
        words[base + 2 * e], words[base + 2 * e + 1] = site, clock
open(sys.argv[2], 'wb').write(struct.pack(f'<{len(words)}I', *words))
