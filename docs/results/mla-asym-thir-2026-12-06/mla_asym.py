"""Rewrites the consumer loop of MLA's thread IR (from `--dump-after fold-accumulator-clears`)
so that warpgroup 0 computes all of S (m64n64) and the softmax and hands P, the rescale and the
running max to warpgroup 1 through shared memory; both run their half of P@V.

    python3 mla_asym.py IN.thir OUT.thir split|decode turns|overlap|structured

turns:      one loop, the warpgroups' parts in branches, hand-offs by named barriers
            (turn.wait / turn.pass); needs the sync passes skipped (skip-sync-passes.diff)
overlap:    the same, warpgroup 0 also issuing the next block's S behind its P@V
structured: a loop per warpgroup, each a sync group of its own, hand-offs by two mbarriers
            (P ready, P free); compiles through the normal pipeline
"""
import re
import sys

PARAMS = dict(
    split=dict(loop='v233', trip='v172', kv0='v234', d=['v235', 'v236', 'v237', 'v238', 'v239', 'v240'],
               m=('v160', 'v161'), mp=('v162', 'v163'), r=('v164', 'v165'), l=('v168', 'v169'),
               o=(32, 159), pbase=222208, pend=230400, guard=True),
    decode=dict(loop='v213', trip='v154', kv0='((0:int32 + v213) * 64:int32)',
                d=['v214', 'v215', 'v216', 'v217', 'v218', 'v219'],
                m=('v144', 'v145'), mp=('v146', 'v147'), r=('v148', 'v149'), l=('v152', 'v153'),
                o=(16, 143), pbase=221184, pend=229376, guard=False))
SC = '0.06011229333333333'
LANE = '(threadIdx.x % 32:int32)'
ROW = f'((((threadIdx.x // 32:int32) % 4:int32) * 16:int32) + ({LANE} // 4:int32))'
S = [f'v{400 + i}' for i in range(32)]
WG_OFFSET = ' + (((threadIdx.x // 128:int32) % 2:int32) * 4096:int32)'


def col(i):
    """The column of accumulator register i of an m64n64 wgmma."""
    return f'((({LANE} % 4:int32) * 2:int32) + {8 * (i // 4) + i % 2}:int32)'


def tree(op, xs):
    while len(xs) > 1:
        xs = [f'{op}({xs[k]}, {xs[k + 1]})' if op != '+' else f'({xs[k]} + {xs[k + 1]})'
              for k in range(0, len(xs), 2)]
    return xs[0]


def main(src, dst, which, mode):
    P = PARAMS[which]
    L = open(src).read().split('\n')
    dyn = int(re.search(r'dynamic_smem=(\d+)', L[1]).group(1))
    SB = (dyn + 15) // 16 * 16          # the rescale of each row, then the running max
    MB, SE = SB + 256, SB + 512
    READY, FREE = SE, SE + 8            # structured: the hand-off mbarriers
    END = SE + 16 if mode == 'structured' else SE
    assert END <= 232448
    loop, trip = P['loop'], P['trip']
    start = next(i for i, l in enumerate(L)
                 if l.startswith(f'    for {loop}: int32 in range(0:int32, {trip}, 1:int32) {{'))
    end = next(i for i in range(start + 1, len(L)) if L[i] == '    }')
    body = L[start + 1:end]

    def find(prefix):
        return next(l for l in body if l.strip().startswith(prefix))
    d = P['d']
    dA1, dA2 = find(f'var {d[0]}').strip(), find(f'var {d[3]}').strip()
    dB1 = find(f'var {d[1]}').replace(WG_OFFSET, '').strip()
    dB2 = find(f'var {d[4]}').replace(WG_OFFSET, '').strip()
    assert WG_OFFSET not in dB1 and WG_OFFSET not in dB2
    old16 = 'vector<float32x16>(' + ', '.join(f'v{i}' for i in range(16)) + ')'

    def widen(l):
        assert old16 in l
        return (l.replace(old16, 'vector<float32x32>(' + ', '.join(S) + ')')
                .replace('float32x16 =', 'float32x32 =').replace('m64n32k16', 'm64n64k16').strip())
    g1, g2 = widen(find(f'var {d[2]}')), widen(find(f'var {d[5]}'))
    i_pv = next(i for i, l in enumerate(body)
                if l.strip().startswith('var ') and f'smem_address({P["pbase"]}:int32)' in l)
    pv = [l.strip() for l in body[i_pv:] if l.strip() not in ('fence.proxy.async.shared', 'barrier 1, 256')]
    arrive = pv.pop()
    assert arrive.startswith('mbarrier.arrive')
    (o0, o1), (r0, r1), (m0, m1), (p0, p1), (l0, l1) = P['o'], P['r'], P['m'], P['mp'], P['l']
    i_o = next(i for i, l in enumerate(body) if l.strip() == f'v{o0} = (v{o0} * {r0})')
    rescale = [l.strip() for l in body[i_o:i_o + (o1 - o0 + 1)]]
    assert rescale[-1] == f'v{o1} = (v{o1} * {r1})'
    kvline = [find(f'var {P["kv0"]}').strip()] if P['kv0'].startswith('v') else []
    head = [l.strip() for l in body[0:2]]  # let, then the wait for the K/V slot
    kv0 = P['kv0']
    top = [S[i] for i in range(32) if i % 4 < 2]
    bot = [S[i] for i in range(32) if i % 4 >= 2]

    def issue_s(k, names):
        """The two score gemms of block k into S, their variables renamed to names."""
        ren = dict(zip(d, names))

        def r(l):
            return re.sub(r'\bv\d+\b', lambda m: ren.get(m.group(0), m.group(0)), l.replace(loop, k))
        x = [f'{s} = undef<float32>' for s in S]
        x += [r(dA1), r(dB1), r(g1)] + [f'{S[i]} = {names[2]}[lane {i}]' for i in range(32)]
        x += [r(dA2), r(dB2), r(g2)] + [f'{S[i]} = {names[5]}[lane {i}]' for i in range(32)]
        return x

    scores = [f'{s} = undef<float32>' for s in S]
    scores += [dA1, dB1, g1] + [f'{S[i]} = {d[2]}[lane {i}]' for i in range(32)]
    scores += [dA2, dB2, g2] + [f'{S[i]} = {d[5]}[lane {i}]' for i in range(32)]
    softmax = [f'if (((63 + cast<int64>({kv0})) + (cast<int64>(cast<int32>(%seqlen_kv)) * -1)) >= 0) {{']
    softmax += [f'  {S[i]} = select((({kv0} + {col(i)}) < cast<int32>(%seqlen_kv)), {S[i]}, -inf)'
                for i in range(32)]
    softmax += ['}', f'{p0} = {m0}', f'{p1} = {m1}',
                f'var v441: float32 = {tree("max", top)}', f'var v442: float32 = {tree("max", bot)}',
                'v441 = max(v441, shfl_xor(v441, 2))', 'v441 = max(v441, shfl_xor(v441, 1))',
                'v442 = max(v442, shfl_xor(v442, 2))', 'v442 = max(v442, shfl_xor(v442, 1))',
                f'{m0} = max({m0}, v441)', f'{m1} = max({m1}, v442)']
    for r, p, m in ((r0, p0, m0), (r1, p1, m1)):
        e = f'exp2((({p} * {SC}) - ({m} * {SC})))'
        softmax.append(f'{r} = select(({m} > -inf), {e}, 1.0)' if P['guard'] else f'{r} = {e}')
    softmax += [f'{S[i]} = exp2((({S[i]} * {SC}) - ({m0 if i % 4 < 2 else m1} * {SC})))' for i in range(32)]
    softmax += [f'var v443: float32 = {tree("+", top)}', f'var v444: float32 = {tree("+", bot)}',
                f'{l0} = (({l0} * {r0}) + v443)', f'{l1} = (({l1} * {r1}) + v444)']
    publish = []  # P (fp16, the swizzled tile P@V reads), then the rescale and the max
    for j in range(8):
        for h in range(2):
            a, b = S[4 * j + 2 * h], S[4 * j + 2 * h + 1]
            publish.append(f'let $0 = ((({ROW} + {8 * h}:int32) * 128:int32) + '
                           f'(((({LANE} % 4:int32) * 2:int32) + {8 * j}:int32) * 2:int32))')
            publish.append(f'smem[(((($0 & -16:int32) ^ ((($0 >> 7:int32) & 7:int32) << 4:int32)) + '
                           f'($0 & 15:int32)) + {P["pbase"]}:int32); {P["pbase"]}, {P["pend"]}] = '
                           f'vector<float16x2>(cast<float16>({a}), cast<float16>({b}))')
    publish += [f'if (({LANE} % 4:int32) == 0:int32) {{']
    read = []
    for base, (x, y) in ((SB, (r0, r1)), (MB, (m0, m1))):
        publish.append(f'  smem[({base}:int32 + ({ROW} * 4:int32)); {SB}, {SE}] = {x}')
        publish.append(f'  smem[({base}:int32 + (({ROW} + 8:int32) * 4:int32)); {SB}, {SE}] = {y}')
        read.append(f'{x} = smem<float32>[({base}:int32 + ({ROW} * 4:int32)); {SB}, {SE}]')
        read.append(f'{y} = smem<float32>[({base}:int32 + (({ROW} + 8:int32) * 4:int32)); {SB}, {SE}]')
    publish += ['}', 'fence.proxy.async.shared']
    wg0 = '(((threadIdx.x // 128:int32) % 2:int32) == 0:int32)'
    not_last = f'(({loop} < ({trip} - 1:int32)))'
    I = '      '
    pro, inits = [], []
    if mode == 'structured':
        l1v = 'v470'

        def wg1(l):
            return re.sub(r'\b' + loop + r'\b', l1v, l)
        w0 = head + kvline + scores + softmax
        w0 += [f'if (({loop} > 0:int32)) {{', f'  mbarrier.wait smem[{FREE}:int32], (({loop} - 1:int32) % 2:int32)', '}']
        w0 += publish + [f'mbarrier.arrive smem[{READY}:int32]'] + rescale + pv + [arrive]
        w1 = [wg1(l) for l in head + kvline] + [f'mbarrier.wait smem[{READY}:int32], ({l1v} % 2:int32)']
        w1 += read + rescale + [wg1(l) for l in pv] + [f'mbarrier.arrive smem[{FREE}:int32]', wg1(arrive)]
        J = '    '
        out = [J + f'if ({wg0}) sync 2, 128 {{', J + '  ' + L[start].strip()]
        out += [J + '    ' + l for l in w0] + [J + '  }', J + '} else sync 3, 128 {', J + '  ' + wg1(L[start].strip())]
        out += [J + '    ' + l for l in w1] + [J + '  }', J + '}']
        end += 1
        init = next(i for i, l in enumerate(L) if l.strip() == 'fence.mbarrier_init')
        ind = L[init][:len(L[init]) - len(L[init].lstrip())]
        inits = [f'{ind}mbarrier.init smem[{READY}:int32], 128:int32', f'{ind}mbarrier.init smem[{FREE}:int32], 128:int32']
    elif mode == 'turns':
        w0 = scores + softmax + [f'if (({loop} > 0:int32)) {{', '  turn.wait 2', '}'] + publish + ['turn.pass 2']
        out = [L[start]] + [I + l for l in head + kvline]
        out += [I + f'if ({wg0}) {{'] + [I + '  ' + l for l in w0]
        out += [I + '} else {'] + [I + '  ' + l for l in ['turn.wait 2'] + read] + [I + '}']
        out += [I + l for l in rescale + pv]
        out += [I + 'if ((((threadIdx.x // 128:int32) % 2:int32) == 1:int32)) {',
                I + f'  if {not_last} {{', I + '    turn.pass 2', I + '  }', I + '}', I + arrive]
    else:  # overlap: S of this block was issued and waited for before (prologue or last iteration)
        w0 = softmax + [f'if (({loop} > 0:int32)) {{', '  turn.wait 2', '}'] + publish + ['turn.pass 2']
        out = [L[start]] + [I + l for l in head + kvline]
        out += [I + f'if ({wg0}) {{'] + [I + '  ' + l for l in w0]
        out += [I + '} else {'] + [I + '  ' + l for l in ['turn.wait 2'] + read] + [I + '}']
        ipv = next(i for i, l in enumerate(pv) if 'wgmma.m64n256k16' in l)
        pv[ipv] = pv[ipv].replace('wgmma.m64n256k16.float16.b_mn_major(', 'wgmma.m64n256k16.float16.b_mn_major.pending1(')
        assert '.pending1(' in pv[ipv]
        out += [I + l for l in rescale + pv]
        accs = ', '.join(f'v{i}' for i in range(o0, o1 + 1))
        nxt = f'({loop} + 1:int32)'
        issue = issue_s(nxt, ['v452', 'v453', 'v454', 'v455', 'v456', 'v457'])
        issue = [l.replace('.pending1(', '.pending2(') if l.startswith('var v454') else l for l in issue]
        issue = [l.replace('wgmma.m64n64k16.float16(', 'wgmma.m64n64k16.float16.pending1(')
                 if l.startswith('var v457') else l for l in issue]
        w0b = [f'if {not_last} {{'] + ['  ' + l.replace(loop, nxt) for l in head]
        w0b += ['  ' + l for l in issue]
        w0b += [f'  wgmma.wait 1 ({accs})', '  ' + arrive, '  wgmma.wait 0 (' + ', '.join(S) + ')', '} else {',
                f'  wgmma.wait 0 ({accs})', '  ' + arrive, '}']
        w1b = [f'wgmma.wait 0 ({accs})', f'if {not_last} {{', '  turn.pass 2', '}', arrive]
        out += [I + f'if ({wg0}) {{'] + [I + '  ' + l for l in w0b]
        out += [I + '} else {'] + [I + '  ' + l for l in w1b] + [I + '}']
        pro = [f'    if (({wg0} and ({trip} > 0:int32))) {{']
        pro += ['      ' + l.replace(loop, '0:int32') for l in head]
        pro += ['      ' + l for l in issue_s('0:int32', ['v458', 'v459', 'v460', 'v461', 'v462', 'v463'])]
        pro += ['    }']
    decl = [f'  var {s}: float32 = 0.0' for s in S]
    k = next(i for i, l in enumerate(L) if l.startswith('  var v0: float32'))
    if inits:
        init = next(i for i, l in enumerate(L) if l.strip() == 'fence.mbarrier_init')
        new = L[:k] + decl + L[k:init] + inits + L[init:start] + out + L[end:]
    else:
        new = L[:k] + decl + L[k:start] + pro + out + L[end:]
    text = '\n'.join(new).replace(f'dynamic_smem={dyn} {{', f'dynamic_smem={END} {{', 1)
    open(dst, 'w').write(text)


if __name__ == '__main__':
    main(*sys.argv[1:5])
