#!/usr/bin/env python3
"""Per-warp clock timelines of a warp-specialized kernel, for finding out how its warpgroups
overlap (which of them waits, on what, while the other runs), which Nsight Compute's sampling
cannot show. A developer tool: it patches the PTX tilec emits, it does not change tilec.

  trace_timeline.py patch IN.ptx OUT.ptx SITES.json [--blocks N]
      Stamps `%clock` before and after every wgmma block (whose time is mostly its wait),
      mbarrier wait and named barrier, and after every mbarrier arrive and TMA load, the
      kernel's entry and its return: lane 0 of each warp of the blocks with
      blockIdx.y = blockIdx.z = 0 and blockIdx.x < N (default 64) stores (site, clock) pairs
      into the module's global `tilec_trace`; SITES.json names each site.
  trace_timeline.py embed HEADER CUBIN
      Replaces the image bytes of a header tilec generated with --emit cubin,header (one image).
  trace_timeline.py report TRACE.bin SITES.json [--block B [--site S]]
      Per block: each warp's phases between stamps, and how much of the time both consumer
      warpgroups spend outside their wgmma waits at once (both in softmax) or inside them at
      once.
  trace_timeline.py report TRACE.bin SITES.json --stages
      Per block, warp 0's pipeline: when its first stage's data came (the fill), how long it
      waited for data after that, inside its wgmma blocks and elsewhere, the median cycles from
      one stage's data to the next, when it returned, and when the block started and returned
      against the others (%globaltimer); then the quartiles over the blocks.

The trace buffer holds MAX_EVENTS stamps per warp for 16 warps of each traced block; a warp
that runs more stops recording (the report says so).
"""
import argparse
import json
import re
import struct
import sys
from collections import defaultdict

MAX_EVENTS = 1024
WARPS = 16


def asm_kind(block):
    """What an inline asm block synchronizes on, or None: a wgmma group (issue, and the wait
    at its end if any), an mbarrier wait or arrive, a wgmma wait alone."""
    text = '\n'.join(block)
    wait = re.search(r'wgmma\.wait_group\.sync\.aligned\s+(\d+)', text)
    if 'wgmma.mma_async' in text:
        return 'wgmma' + (f'+wait{wait.group(1)}' if wait else '')
    if wait:
        return 'wait' + wait.group(1)
    if 'mbarrier.try_wait' in text:
        return 'mbar_wait'
    if 'mbarrier.arrive' in text:
        return 'mbar_arrive'
    if 'cp.async.bulk' in text:
        return 'tma'
    return None


STAMP = """\t{{ .reg .pred tr_q; .reg .b32 tr_c; .reg .b64 tr_a;
\tsetp.lt.and.u32 tr_q, %tr_n, {limit}, %tr_on;
\tmov.u32 tr_c, {clock};
\tcvt.u64.u32 tr_a, %tr_n;
\tadd.u64 tr_a, tr_a, %tr_base;
\t@tr_q st.global.v2.u32 [tr_a], {{{site}, tr_c}};
\t@tr_q add.u32 %tr_n, %tr_n, 8; }}
"""

# The stamps of kinds ending in _ns read this instead of the SM's %clock.
GLOBAL_NS = '%globaltimer_lo'

PROLOGUE = """\t.reg .pred %tr_on, %tr_lt;
\t.reg .b32 %tr_n, %tr_r<8>;
\t.reg .b64 %tr_base, %tr_g;
\tmov.u32 %tr_r0, %ctaid.y;
\tmov.u32 %tr_r1, %ctaid.z;
\tor.b32 %tr_r0, %tr_r0, %tr_r1;
\tmov.u32 %tr_r2, %tid.x;
\tand.b32 %tr_r3, %tr_r2, 31;
\tor.b32 %tr_r0, %tr_r0, %tr_r3;
\tsetp.eq.u32 %tr_on, %tr_r0, 0;
\tmov.u32 %tr_r4, %ctaid.x;
\tsetp.lt.u32 %tr_lt, %tr_r4, {blocks};
\tand.pred %tr_on, %tr_on, %tr_lt;
\tshr.u32 %tr_r5, %tr_r2, 5;
\tmad.lo.u32 %tr_r6, %tr_r4, {warps}, %tr_r5;
\tmul.wide.u32 %tr_base, %tr_r6, {warp_bytes};
\tmov.u64 %tr_g, tilec_trace;
\tadd.u64 %tr_base, %tr_base, %tr_g;
\tmov.u32 %tr_n, 0;
"""


def patch(args):
    lines = open(args.inp).read().split('\n')
    out, sites = [], []
    warp_bytes = MAX_EVENTS * 8

    def stamp(kind, line, clock='%clock'):
        sites.append({'kind': kind, 'line': line})
        out.append(STAMP.format(limit=warp_bytes, site=len(sites) - 1, clock=clock).rstrip('\n'))

    entry_seen = body_open = False
    i = 0
    while i < len(lines):
        line, s = lines[i], lines[i].strip()
        if body_open and '.entry' in line:
            sys.exit('more than one kernel in the module: the stamps assume one')
        if not body_open:
            out.append(line)
            entry_seen = entry_seen or '.entry' in line
            if entry_seen and s == '{':
                body_open = True
                out.append(PROLOGUE.format(blocks=args.blocks, warps=WARPS,
                                           warp_bytes=warp_bytes).rstrip('\n'))
                stamp('entry', i + 1)
                # The entry again in the GPU's nanoseconds, which every SM shares: when each
                # block started, against the others.
                stamp('entry_ns', i + 1, GLOBAL_NS)
            i += 1
            continue
        if s == '// begin inline asm':
            j = i
            while lines[j].strip() != '// end inline asm':
                j += 1
            block = lines[i:j + 1]
            kind = asm_kind(block)
            if kind in ('mbar_arrive', 'tma') or kind is None:
                out.extend(block)
                if kind:
                    stamp(kind, i + 1)
            else:
                stamp(kind + ':begin', i + 1)
                out.extend(block)
                stamp(kind + ':end', i + 1)
            i = j + 1
            continue
        if re.match(r'(bar|barrier)\.(sync|arrive)\b', s):
            stamp('bar:begin', i + 1)
            out.append(line)
            stamp('bar:end', i + 1)
            i += 1
            continue
        if s == 'ret;':
            stamp('ret', i + 1)
            stamp('ret_ns', i + 1, GLOBAL_NS)
        out.append(line)
        i += 1
    if not body_open:
        sys.exit('no kernel entry found')
    text = '\n'.join(out)
    total = args.blocks * WARPS * MAX_EVENTS * 2
    decl = f'.global .align 16 .u32 tilec_trace[{total}];\n'
    m = re.search(r'^\.address_size[ \t]+\d+[ \t]*$', text, re.M)
    if not m:
        sys.exit('no .address_size line')
    text = text[:m.end()] + '\n' + decl + text[m.end():]
    open(args.out, 'w').write(text)
    json.dump({'sites': sites, 'blocks': args.blocks, 'warps': WARPS,
               'max_events': MAX_EVENTS}, open(args.sites, 'w'), indent=1)
    print(f'{len(sites)} sites, buffer {total * 4} bytes')


def embed(args):
    header = open(args.header).read()
    if 'kImage1[]' in header:
        sys.exit('the header has more than one image')
    data = open(args.cubin, 'rb').read()
    start = header.index('kImage0[] = {')
    start = header.index('{', start) + 1
    end = header.index('};', start)
    rows = []
    for i in range(0, len(data), 16):
        rows.append('    ' + ', '.join(f'0x{b:02x}' for b in data[i:i + 16]) + ',')
    header = header[:start] + '\n' + '\n'.join(rows) + '\n' + header[end:]
    open(args.header, 'w').write(header)
    print(f'embedded {len(data)} bytes')


def category(kind):
    base = kind.split(':')[0]
    if base.startswith('wgmma') or base.startswith('wait'):
        return 'tensor_wait'
    return {'mbar_wait': 'mbar_wait', 'bar': 'bar'}.get(base, 'run')


def rel(clock, t0):
    """Cycles from t0 to clock: %clock is 32 bits and may wrap within a block."""
    return (clock - t0 + (1 << 31)) % (1 << 32) - (1 << 31)


def phases(ev, sites, t0):
    """A warp's stamps as (start, end, category): between a site's begin and end stamps the
    category of the site (the time a wgmma block takes is mostly its wait), else 'run'."""
    out = []
    for (s0, c0), (s1, c1) in zip(ev, ev[1:]):
        k0 = sites[s0]['kind'] if s0 < len(sites) else '?'
        k1 = sites[s1]['kind'] if s1 < len(sites) else '?'
        inside = k0.endswith(':begin') and k1 == k0[:-len('begin')] + 'end'
        out.append((rel(c0, t0), rel(c1, t0), category(k0) if inside else 'run'))
    return out


def overlap(a, b):
    """Cycles during which phase list a is in category x while b is in category y (both lists
    sorted and contiguous, as phases() makes them)."""
    bounds = sorted({p for ph in (a, b) for s, e, _ in ph for p in (s, e)})
    table = defaultdict(int)
    ia = ib = 0
    for t, u in zip(bounds, bounds[1:]):
        while ia < len(a) and a[ia][1] <= t:
            ia += 1
        while ib < len(b) and b[ib][1] <= t:
            ib += 1
        ca = a[ia][2] if ia < len(a) and a[ia][0] <= t else 'gone'
        cb = b[ib][2] if ib < len(b) and b[ib][0] <= t else 'gone'
        table[(ca, cb)] += u - t
    return table


def warp_events(words, meta, block, warp):
    """One warp's (site, %clock) stamps in the trace, in order, and its nanosecond stamps by
    kind (entry_ns, ret_ns)."""
    sites = meta['sites']
    per_warp = meta['max_events'] * 2
    base = (block * meta['warps'] + warp) * per_warp
    ev, ns = [], {}
    for e in range(meta['max_events']):
        site, clk = words[base + 2 * e], words[base + 2 * e + 1]
        if site == 0 and clk == 0 and e > 0:
            break
        kind = sites[site]['kind'] if site < len(sites) else '?'
        if kind.endswith('_ns'):
            ns[kind] = clk
        else:
            ev.append((site, clk))
    return ev, ns


def stages(meta, words):
    """The --stages report: each block's fill, waits and stage period, from warp 0."""
    sites = meta['sites']
    cols = ('cycles', 'fill', 'data_wait', 'tensor', 'other', 'period', 'stages', 'start_ns',
            'end_ns')
    rows = []
    for b in range(meta['blocks']):
        ev, ns = warp_events(words, meta, b, 0)
        if len(ev) < 2:
            continue
        t0 = ev[0][1]
        kinds = [(sites[s]['kind'] if s < len(sites) else '?', rel(c, t0)) for s, c in ev]
        data = [t for k, t in kinds if k == 'mbar_wait:end']
        if not data:
            continue
        spent = defaultdict(int)
        for (k0, a), (k1, z) in zip(kinds, kinds[1:]):
            if k0.endswith(':begin') and k1 == k0[:-len('begin')] + 'end':
                spent[category(k0)] += z - a
        first_wait = next(z - a for (k0, a), (k1, z) in zip(kinds, kinds[1:])
                          if k0 == 'mbar_wait:begin' and k1 == 'mbar_wait:end')
        total = kinds[-1][1]
        periods = sorted(y - x for x, y in zip(data, data[1:]))
        period = periods[len(periods) // 2] if periods else 0
        waits = spent['mbar_wait'] - first_wait
        rows.append((b, total, data[0], waits, spent['tensor_wait'],
                     total - data[0] - waits - spent['tensor_wait'], period, len(data),
                     ns.get('entry_ns'), ns.get('ret_ns')))
    if rows and all(r[-1] is not None and r[-2] is not None for r in rows):
        first = min(r[-2] for r in rows)
        rows = [r[:-2] + (rel(r[-2], first), rel(r[-1], first)) for r in rows]
    else:
        rows = [r[:-2] + (0, 0) for r in rows]
    print('Warp 0 of each block, in its SM\'s clock cycles from the block\'s entry: fill = when '
          'its first stage\'s data came; data_wait = its waits for data after that; tensor = '
          'inside its wgmma blocks; other = the rest after the fill (dequantization, issue, '
          'epilogue); period = the median cycles from one stage\'s data to the next; start_ns and '
          'end_ns = when the block started and returned, in nanoseconds after the first traced '
          'block started.')
    print(f'{"block":>5} ' + ' '.join(f'{c:>9}' for c in cols))
    for r in rows:
        print(f'{r[0]:5d} ' + ' '.join(f'{v:9d}' for v in r[1:]))
    if rows:
        print('quartiles over the blocks:')
        for i, c in enumerate(cols):
            vals = sorted(r[i + 1] for r in rows)
            q = [vals[(len(vals) - 1) * k // 4] for k in range(5)]
            print(f'  {c:>9}: min {q[0]}  q1 {q[1]}  median {q[2]}  q3 {q[3]}  max {q[4]}')


def report(args):
    meta = json.load(open(args.sites))
    raw = open(args.trace, 'rb').read()
    words = struct.unpack(f'<{len(raw) // 4}I', raw)
    if args.stages:
        stages(meta, words)
        return
    sites = meta['sites']
    wanted = [args.block] if args.block is not None else range(meta['blocks'])
    rows = []
    for b in wanted:
        warps = {}
        for w in range(meta['warps']):
            ev, _ = warp_events(words, meta, b, w)
            if len(ev) > 1:
                warps[w] = ev
        if 0 not in warps or 4 not in warps:
            continue
        t0 = warps[0][0][1]
        full = [w for w, ev in warps.items() if len(ev) == meta['max_events']]
        if args.block is not None:
            for w in (0, 4, 8):
                if w not in warps:
                    continue
                print(f'block {b} warp {w}: {len(warps[w])} stamps')
                prev = warps[w][0][1]
                for site, clk in warps[w][:args.limit]:
                    print(f'  {rel(clk, t0):9d} (+{rel(clk, prev):6d})  {sites[site]["kind"]} #{site}')
                    prev = clk
        if args.block is not None and args.site is not None:
            at = {w: [rel(c, t0) for site, c in warps[w] if site == args.site] for w in (0, 4)}
            periods = sorted(b - a for a, b in zip(at[0], at[0][1:]))
            print(f'site #{args.site} ({sites[args.site]["kind"]}), {len(at[0])} visits; warp 4 '
                  f'after warp 0: {[b - a for a, b in zip(at[0], at[4])]}')
            if periods:
                q = [periods[len(periods) * i // 4] for i in (1, 2, 3)]
                print(f'warp 0 between visits, quartiles: {q[0]} / {q[1]} / {q[2]}')
        p0, p1 = phases(warps[0], sites, t0), phases(warps[4], sites, t0)
        end = max(p0[-1][1], p1[-1][1])
        share = lambda ph, c: sum(e - s for s, e, k in ph if k == c) / max(end, 1)
        both = overlap(p0, p1)
        tot = max(sum(both.values()), 1)
        rows.append((b, end, len(warps[0]), share(p0, 'run'), share(p1, 'run'),
                     share(p0, 'tensor_wait'), share(p1, 'tensor_wait'),
                     share(p0, 'mbar_wait') + share(p0, 'bar'),
                     share(p1, 'mbar_wait') + share(p1, 'bar'),
                     both[('run', 'run')] / tot,
                     both[('tensor_wait', 'tensor_wait')] / tot, full))
    print('Consumer warpgroups 0 and 1 (warps 0 and 4), shares of the block\'s cycles: run = '
          'outside every wait (softmax, issue), tensor = inside a wgmma block or wait, '
          'sync = mbarrier waits and named barriers; both_run / both_tensor = both warpgroups '
          'at once.')
    print(f'{"block":>5} {"cycles":>8} {"stamps":>6}  {"run0":>6} {"run1":>6}  {"tensor0":>7} '
          f'{"tensor1":>7}  {"sync0":>6} {"sync1":>6}  {"both_run":>8} {"both_tensor":>11}')
    for b, end, n, r0, r1, t0_, t1, s0, s1, br, bt, full in rows:
        print(f'{b:5d} {end:8d} {n:6d}  {r0:6.1%} {r1:6.1%}  {t0_:7.1%} {t1:7.1%}  {s0:6.1%} '
              f'{s1:6.1%}  {br:8.1%} {bt:11.1%}' + ('  (buffer full)' if full else ''))


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest='cmd', required=True)
    a = sub.add_parser('patch')
    a.add_argument('inp')
    a.add_argument('out')
    a.add_argument('sites')
    a.add_argument('--blocks', type=int, default=64)
    a.set_defaults(fn=patch)
    a = sub.add_parser('embed')
    a.add_argument('header')
    a.add_argument('cubin')
    a.set_defaults(fn=embed)
    a = sub.add_parser('report')
    a.add_argument('trace')
    a.add_argument('sites')
    a.add_argument('--block', type=int)
    a.add_argument('--limit', type=int, default=200)
    a.add_argument('--stages', action='store_true',
                   help='each block\'s pipeline fill, waits and stage period (warp 0)')
    a.add_argument('--site', type=int,
                   help='with --block: when warp 4 reaches this site after warp 0, visit by '
                        'visit, and warp 0\'s cycles between visits (quartiles)')
    a.set_defaults(fn=report)
    args = p.parse_args()
    args.fn(args)


if __name__ == '__main__':
    main()
