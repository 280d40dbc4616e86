# Which summation order does torch 1.13 use in h.square().mean(-1) (f32, 64 cols)?
import torch
torch.manual_seed(0)
f = torch.float32
def hs_shuf(v):
    v = v + torch.cat([v[4:], v[:4]]); v = v + v[[2,3,0,1,6,7,4,5]]; v = v + v[[1,0,3,2,5,4,7,6]]
    return v[0]
def seq(x):
    a = torch.tensor(0.0)
    for t in x: a = a + t
    return a
def lanes(x, nacc):
    accs = [x[8*i:8*i+8].clone() for i in range(nacc)]
    for j in range(nacc * 8, x.numel(), 8 * nacc):
        for i in range(nacc):
            accs[i] = accs[i] + x[j + 8*i:j + 8*i + 8]
    while len(accs) > 1:  # pairwise combine
        accs = [accs[i] + accs[i + 1] for i in range(0, len(accs), 2)]
    return accs[0]
def torch_cascade(x):
    # SumKernel.cpp row_sum: 4 vector accumulators (vector i into i % 4), combined
    # ((a0 + a1) + a2) + a3, then 0 + lane0 + lane1 + ... + lane7.
    accs = [torch.zeros(8) for _ in range(4)]
    nv = x.numel() // 8
    for i in range(nv // 4 * 4):
        accs[i % 4] = accs[i % 4] + x[8*i:8*i+8]
    for i in range(nv // 4 * 4, nv):
        accs[0] = accs[0] + x[8*i:8*i+8]
    a = ((accs[0] + accs[1]) + accs[2]) + accs[3]
    r = torch.tensor(0.0)
    for t in x[nv*8:]: r = r + t
    for i in range(8): r = r + a[i]
    return r
def lanes_seqh(x, nacc):
    v = lanes(x, nacc); a = v[0]
    for i in range(1, 8): a = a + v[i]
    return a
cands = {"torch_cascade": torch_cascade, "seq": seq, "l1shuf": lambda x: hs_shuf(lanes(x, 1)), "l4shuf": lambda x: hs_shuf(lanes(x, 4)),
         "l4seqh": lambda x: lanes_seqh(x, 4), "l1seqh": lambda x: lanes_seqh(x, 1),
         "l2shuf": lambda x: hs_shuf(lanes(x, 2)), "l8shuf": lambda x: hs_shuf(lanes(x, 8)) if x.numel() >= 64 else seq(x)}
for n in (64, 128):
    bad = {k: 0 for k in cands}
    for t in range(300):
        x = torch.randn(n).to(torch.bfloat16).float() * 3
        sq = x.square()
        ref = sq.view(1, -1).mean(-1)[0] * n
        assert bool(ref == sq.sum(-1))
        for k, fn in cands.items():
            bad[k] += int(fn(sq) != ref)
    print(n, bad)

# Rows shorter than one vector (1..7 columns) take the scalar row_sum: four
# scalar accumulators (element 4i + k into k), the rest into the first, then
# ((a0 + a1) + a2) + a3.
def ilp4(x):
    n = x.numel(); g = n // 4
    acc = [torch.tensor(0.0) for _ in range(4)]
    for i in range(g):
        for k in range(4): acc[k] = acc[k] + x[4*i + k]
    for i in range(4*g, n): acc[0] = acc[0] + x[i]
    return ((acc[0] + acc[1]) + acc[2]) + acc[3]
for n in range(1, 8):
    bad = {"seq": 0, "ilp4": 0}
    for t in range(500):
        sq = (torch.randn(n) * 3).square()
        ref = sq.view(1, -1).sum(-1)[0]
        for k, fn in (("seq", seq), ("ilp4", ilp4)):
            bad[k] += int(fn(sq) != ref)
    print(n, bad)
