# Pins down torch 1.13's CPU softmax (last dim, f32) reduction order.
import torch
torch.manual_seed(0)
f = torch.float32
def hsum_seq(v):
    a = v[0]
    for i in range(1, 8): a = (a + v[i]).to(f)
    return a
def hsum_shuf(v):
    v = v.clone()
    v = v + torch.cat([v[4:], v[:4]])          # 128-bit swap
    v = v + v[[2,3,0,1,6,7,4,5]]               # 64-bit
    v = v + v[[1,0,3,2,5,4,7,6]]               # 32-bit
    return v[0]
def emul(x, hsum):
    n = x.numel()
    mx = x.max()
    e = torch.exp(x - mx)
    acc = e[:8].clone()
    d = 8
    while d + 8 <= n:
        acc = acc + e[d:d+8]; d += 8
    if d < n:
        r = n - d
        acc[:r] = acc[:r] + e[d:]
    s = hsum(acc)
    inv = (torch.tensor(1.0, dtype=f) / s)
    return e * inv, e / s
for n in (82, 32, 16, 64):
    bad = {k: 0 for k in ("seq_mul", "seq_div", "shuf_mul", "shuf_div")}
    for t in range(300):
        x = (torch.randn(n, dtype=f) * 3).to(f)
        ref = torch.softmax(x, -1)
        for name, h in (("seq", hsum_seq), ("shuf", hsum_shuf)):
            m, dv = emul(x, h)
            bad[name + "_mul"] += int((m != ref).sum())
            bad[name + "_div"] += int((dv != ref).sum())
    print(n, bad)
