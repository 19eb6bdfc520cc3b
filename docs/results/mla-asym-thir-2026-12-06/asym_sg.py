"""Structured form of the asymmetric MLA loop: one loop per consumer warpgroup, each a sync
group of its own (barrier 2 / 3 of 128 threads), handing P, the rescale and the running max
over through shared memory with two mbarriers (P ready: 128 arrivals of warpgroup 0; P free:
128 of warpgroup 1). Compiled through the normal pipeline: insert-barriers orders warpgroup
0's own P for its P@V with its group's barrier."""
import re, sys
sys.argv += [] 
src, dst, which = sys.argv[1], sys.argv[2], sys.argv[3]
P = dict(split=dict(loop='v233', trip='v172', kv0='v234', d=['v235', 'v236', 'v237', 'v238', 'v239', 'v240'],
                    m=('v160', 'v161'), mp=('v162', 'v163'), r=('v164', 'v165'), l=('v168', 'v169'),
                    o=(32, 159), pbase=222208, pend=230400, guard=True),
         decode=dict(loop='v213', trip='v154', kv0='((0:int32 + v213) * 64:int32)',
                     d=['v214', 'v215', 'v216', 'v217', 'v218', 'v219'],
                     m=('v144', 'v145'), mp=('v146', 'v147'), r=('v148', 'v149'), l=('v152', 'v153'),
                     o=(16, 143), pbase=221184, pend=229376, guard=False))[which]
L = open(src).read().split('\n')
dyn = int(re.search(r'dynamic_smem=(\d+)', L[1]).group(1))
SB = (dyn + 15) // 16 * 16
MB, SE = SB + 256, SB + 512
READY, FREE = SE, SE + 8
END = SE + 16
assert END <= 232448
loop = P['loop']
start = next(i for i, l in enumerate(L) if l.startswith(f'    for {loop}: int32 in range(0:int32, {P["trip"]}, 1:int32) {{'))
end = next(i for i in range(start + 1, len(L)) if L[i] == '    }')
assert L[start - 1].strip() == 'barrier 1, 256' and L[start - 2].strip() == 'fence.proxy.async.shared'
body = L[start + 1:end]
def find(prefix):
    return next(l for l in body if l.strip().startswith(prefix))
d = P['d']
WG = ' + (((threadIdx.x // 128:int32) % 2:int32) * 4096:int32)'
dA1, dA2 = find(f'var {d[0]}'), find(f'var {d[3]}')
dB1, dB2 = find(f'var {d[1]}').replace(WG, ''), find(f'var {d[4]}').replace(WG, '')
S = [f'v{400 + i}' for i in range(32)]
old16 = 'vector<float32x16>(' + ', '.join(f'v{i}' for i in range(16)) + ')'
new32 = 'vector<float32x32>(' + ', '.join(S) + ')'
def widen(l):
    assert old16 in l
    return l.replace(old16, new32).replace('float32x16 =', 'float32x32 =').replace('m64n32k16', 'm64n64k16')
g1, g2 = widen(find(f'var {d[2]}')), widen(find(f'var {d[5]}'))
i_pv = next(i for i, l in enumerate(body) if l.strip().startswith('var ') and f'smem_address({P["pbase"]}:int32)' in l)
pv = [l.strip() for l in body[i_pv:] if l.strip() not in ('fence.proxy.async.shared', 'barrier 1, 256')]
arrive = pv[-1]
assert arrive.startswith('mbarrier.arrive')
pv = pv[:-1]
o0, o1 = P['o']
r0, r1 = P['r']
i_o = next(i for i, l in enumerate(body) if l.strip() == f'v{o0} = (v{o0} * {r0})')
rescale = [l.strip() for l in body[i_o:i_o + (o1 - o0 + 1)]]
kvline = [find(f'var {P["kv0"]}').strip()] if P['kv0'].startswith('v') else []
SC = '0.06011229333333333'
lane = '(threadIdx.x % 32:int32)'
row = f'((((threadIdx.x // 32:int32) % 4:int32) * 16:int32) + ({lane} // 4:int32))'
def col(i):
    return f'((({lane} % 4:int32) * 2:int32) + {8 * (i // 4) + i % 2}:int32)'
def tree(op, xs):
    while len(xs) > 1:
        xs = [f'{op}({xs[k]}, {xs[k + 1]})' if op != '+' else f'({xs[k]} + {xs[k + 1]})' for k in range(0, len(xs), 2)]
    return xs[0]
top = [S[i] for i in range(32) if i % 4 < 2]
bot = [S[i] for i in range(32) if i % 4 >= 2]
m0, m1 = P['m']; p0, p1 = P['mp']; l0, l1 = P['l']
kv0 = P['kv0']
head = [l.strip() for l in body[0:2]]  # let + mbarrier.wait full
w0 = head + kvline + [f'{s} = undef<float32>' for s in S]
w0 += [dA1.strip(), dB1.strip(), g1.strip()] + [f'{S[i]} = {d[2]}[lane {i}]' for i in range(32)]
w0 += [dA2.strip(), dB2.strip(), g2.strip()] + [f'{S[i]} = {d[5]}[lane {i}]' for i in range(32)]
w0 += [f'if (((63 + cast<int64>({kv0})) + (cast<int64>(cast<int32>(%seqlen_kv)) * -1)) >= 0) {{']
w0 += [f'  {S[i]} = select((({kv0} + {col(i)}) < cast<int32>(%seqlen_kv)), {S[i]}, -inf)' for i in range(32)]
w0 += ['}', f'{p0} = {m0}', f'{p1} = {m1}',
       f'var v441: float32 = {tree("max", top)}', f'var v442: float32 = {tree("max", bot)}',
       'v441 = max(v441, shfl_xor(v441, 2))', 'v441 = max(v441, shfl_xor(v441, 1))',
       'v442 = max(v442, shfl_xor(v442, 2))', 'v442 = max(v442, shfl_xor(v442, 1))',
       f'{m0} = max({m0}, v441)', f'{m1} = max({m1}, v442)']
for r, p, m in ((r0, p0, m0), (r1, p1, m1)):
    e = f'exp2((({p} * {SC}) - ({m} * {SC})))'
    w0.append(f'{r} = select(({m} > -inf), {e}, 1.0)' if P['guard'] else f'{r} = {e}')
for i in range(32):
    w0.append(f'{S[i]} = exp2((({S[i]} * {SC}) - ({m0 if i % 4 < 2 else m1} * {SC})))')
w0 += [f'var v443: float32 = {tree("+", top)}', f'var v444: float32 = {tree("+", bot)}',
       f'{l0} = (({l0} * {r0}) + v443)', f'{l1} = (({l1} * {r1}) + v444)']
# P's buffer is free once warpgroup 1's P@V of the previous block completed.
w0 += [f'if (({loop} > 0:int32)) {{', f'  mbarrier.wait smem[{FREE}:int32], (({loop} - 1:int32) % 2:int32)', '}']
for j in range(8):
    for h in range(2):
        a, b = S[4 * j + 2 * h], S[4 * j + 2 * h + 1]
        addr = f'((({row} + {8 * h}:int32) * 128:int32) + (((({lane} % 4:int32) * 2:int32) + {8 * j}:int32) * 2:int32))'
        w0.append(f'let $0 = {addr}')
        w0.append(f'smem[(((($0 & -16:int32) ^ ((($0 >> 7:int32) & 7:int32) << 4:int32)) + ($0 & 15:int32)) + '
                  f'{P["pbase"]}:int32); {P["pbase"]}, {P["pend"]}] = vector<float16x2>(cast<float16>({a}), cast<float16>({b}))')
w0 += [f'if (({lane} % 4:int32) == 0:int32) {{']
for base, (x, y) in ((SB, (r0, r1)), (MB, (m0, m1))):
    w0.append(f'  smem[({base}:int32 + ({row} * 4:int32)); {SB}, {SE}] = {x}')
    w0.append(f'  smem[({base}:int32 + (({row} + 8:int32) * 4:int32)); {SB}, {SE}] = {y}')
w0 += ['}', 'fence.proxy.async.shared', f'mbarrier.arrive smem[{READY}:int32]']
w0 += rescale + pv + [arrive]
L1 = 'v470'
def wg1(l):
    return re.sub(r'\b' + loop + r'\b', L1, l)
w1 = [wg1(l) for l in head] + [wg1(l) for l in kvline]
w1 += [f'mbarrier.wait smem[{READY}:int32], ({L1} % 2:int32)']
for base, (x, y) in ((SB, (r0, r1)), (MB, (m0, m1))):
    w1.append(f'{x} = smem<float32>[({base}:int32 + ({row} * 4:int32)); {SB}, {SE}]')
    w1.append(f'{y} = smem<float32>[({base}:int32 + (({row} + 8:int32) * 4:int32)); {SB}, {SE}]')
w1 += rescale + [wg1(l) for l in pv] + [f'mbarrier.arrive smem[{FREE}:int32]', wg1(arrive)]
I = '    '
out = [I + 'if ((((threadIdx.x // 128:int32) % 2:int32) == 0:int32)) sync 2, 128 {', I + '  ' + L[start].strip()]
out += [I + '    ' + l for l in w0] + [I + '  }', I + '} else sync 3, 128 {', I + '  ' + wg1(L[start].strip())]
out += [I + '    ' + l for l in w1] + [I + '  }', I + '}']
decl = [f'  var {s}: float32 = 0.0' for s in S]
k = next(i for i, l in enumerate(L) if l.startswith('  var v0: float32'))
init = next(i for i, l in enumerate(L) if l.strip() == 'fence.mbarrier_init')
ind = L[init][:len(L[init]) - len(L[init].lstrip())]
inits = [f'{ind}mbarrier.init smem[{READY}:int32], 128:int32', f'{ind}mbarrier.init smem[{FREE}:int32], 128:int32']
new = L[:k] + decl + L[k:init] + inits + L[init:start] + out + L[end + 1:]
text = '\n'.join(new).replace(f'dynamic_smem={dyn} {{', f'dynamic_smem={END} {{', 1)
open(dst, 'w').write(text)
