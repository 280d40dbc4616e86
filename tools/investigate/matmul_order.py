# Checks torch 1.13's f32 matmul (OpenBLAS sgemm) against one FMA chain per
# output over k in increasing order (fma emulated in double: a*b exact).
import torch
torch.manual_seed(1)
f, d64 = torch.float32, torch.float64
def chain(a, b, fma=True):
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=f)
    for k in range(a.shape[1]):
        p = a[:, k:k+1].to(d64) * b[k:k+1, :].to(d64)
        if fma: acc = (acc.to(d64) + p).to(f)
        else: acc = (acc + p.to(f)).to(f)
    return acc
for (T, d) in ((82, 64), (32, 64)):
    q = torch.randn(1, 2, T, d).to(torch.bfloat16).to(f)
    k = torch.randn(1, 2, T, d).to(torch.bfloat16).to(f)
    v = torch.randn(1, 2, T, d).to(torch.bfloat16).to(f)
    s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / d ** 0.5)
    p = torch.softmax(s, -1)
    o = torch.matmul(p, v)
    for h in range(2):
        s0 = torch.matmul(q, k.transpose(-1, -2))[0, h]
        print(T, "QK fma", int((chain(q[0, h], k[0, h].t()) != s0).sum()),
              "PV fma", int((chain(p[0, h], v[0, h]) != o[0, h]).sum()),
              "PV mul+add", int((chain(p[0, h], v[0, h], False) != o[0, h]).sum()), "of", o[0, h].numel())
