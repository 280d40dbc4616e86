# For one block input (raw bf16 [B, T, hidden]) dumps qkv after RoPE and the
# attention output (pre o_proj) as the torch-1.13 emulator computes them.
#   dump_attn.py GOLD CASE BLOCK_IN PREFIX OUT
import json, math, os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variants as V
import torch
gold, case, bin_, prefix, out = sys.argv[1:6]
d = os.path.join(gold, case)
arch = json.load(open(os.path.join(d, "case.json")))["arch"]
m = V.Emu(arch, V.load_file(os.path.join(d, "model.safetensors")), {})
B = 3 if case == "tiny-rope" else 4
import numpy as np
h = torch.from_numpy(np.fromfile(bin_, dtype=np.int16)).view(torch.bfloat16).view(B, m.T, m.h)
S = m.T
qkv = m.lin(h, prefix + "self_attn.qkv_proj.weight").view(B, S, 3 * m.heads, m.hd)
q, k, v = qkv[:, :, :m.heads], qkv[:, :, m.heads:2 * m.heads], qkv[:, :, 2 * m.heads:]
if m.cos is not None:
    q, k = m.rope(q, k)
torch.cat((q, k, v), dim=2).contiguous().view(torch.int16).numpy().tofile(out + ".qkv")
qf, kf, vf = (t.float().transpose(1, 2) for t in (q, k, v))
s = torch.matmul(qf, kf.transpose(-1, -2)) * (1.0 / math.sqrt(m.hd))
o = torch.matmul(torch.softmax(s, dim=-1), vf)
o.transpose(1, 2).to(torch.bfloat16).reshape(B, S, m.h).contiguous().view(torch.int16).numpy().tofile(out + ".o")
o = o.transpose(1, 2).to(torch.bfloat16).reshape(B, S, m.h)
op = m.lin(o, prefix + "self_attn.o_proj.weight")
h1 = m.rms(h + op)
gu = m.lin(h1, prefix + "mlp.gate_up_proj.weight")
g, u = gu.chunk(2, dim=-1)
act = m.silu(g) * u
dn = m.lin(act, prefix + "mlp.down_proj.weight")
res = m.rms(h1 + dn)
for tag, t in (("op", op), ("h1", h1), ("gu", gu), ("act", act), ("dn", dn), ("res", res)):
    t.contiguous().view(torch.int16).numpy().tofile(out + "." + tag)
