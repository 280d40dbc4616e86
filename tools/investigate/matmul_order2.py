# torch 1.13 f32 matmul vs one FMA chain per output, at the HRM shapes with the
# golden's layouts (q, k, v as [B, S, H, d] transposed to [B, H, S, d]).
import torch
torch.manual_seed(1)
f, d64 = torch.float32, torch.float64
def chain(a, b):
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=f)
    for k in range(a.shape[1]):
        acc = (acc.to(d64) + a[:, k:k+1].to(d64) * b[k:k+1, :].to(d64)).to(f)
    return acc
for (B, T, H, d) in ((3, 82, 4, 16), (4, 32, 2, 64)):
    q, k, v = (torch.randn(B, T, H, d).to(torch.bfloat16).float().transpose(1, 2) for _ in range(3))
    s0 = torch.matmul(q, k.transpose(-1, -2))
    s = s0 * (1.0 / d ** 0.5)
    p = torch.softmax(s, -1)
    o = torch.matmul(p, v)
    nq = npv = 0
    for b in range(B):
        for h in range(H):
            nq += int((chain(q[b, h], k[b, h].t()) != s0[b, h]).sum())
            npv += int((chain(p[b, h], v[b, h]) != o[b, h]).sum())
    print((B, T, H, d), "QK mismatches", nq, "PV mismatches", npv, "of", o.numel(), s.numel())
