"""Which f32 accumulation order reproduces the local torch's bf16 F.linear bit-exactly?
Uses the real layer inputs captured from the HRM forward (tiny-rope, small-learned step 0)."""
import json, os, sys
import torch
import torch.nn.functional as F
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import variants as V  # noqa
bf = torch.bfloat16
torch.set_num_threads(int(os.environ.get("NT", "2")))


def emu(x2, w, order):
    M, K = x2.shape
    acc = torch.zeros(M, w.shape[0], dtype=torch.float32)
    if order == "seq":
        ks = list(range(K))
    elif order == "pair_odd_first":
        ks = [k ^ 1 for k in range(K)]
    elif order == "f64":
        return (x2.double() @ w.double().t()).float().to(bf)
    elif order.startswith("ilp"):
        n = int(order[3:])
        ps = [torch.zeros_like(acc) for _ in range(n)]
        for k in range(K):
            ps[k % n] = ps[k % n] + x2[:, k:k + 1] * w[:, k]
        acc = ps[0]
        for p in ps[1:]:
            acc = acc + p
        return acc.to(bf)
    elif order.startswith("pairilp"):  # vdpbf16ps lanes: n accumulators, each a dpbf16 over pairs
        n = int(order[7:])
        ps = [torch.zeros_like(acc) for _ in range(n)]
        for i, k0 in enumerate(range(0, K, 2)):
            for k in (k0 + 1, k0):
                ps[i % n] = ps[i % n] + x2[:, k:k + 1] * w[:, k]
        acc = ps[0]
        for p in ps[1:]:
            acc = acc + p
        return acc.to(bf)
    for k in ks:
        acc = acc + x2[:, k:k + 1] * w[:, k]
    return acc.to(bf)


caps = []
orig = V.Emu.lin


def cap(self, x, n, bias=None):
    out = orig(self, x, n, bias)
    if bias is None and len(caps) < 400:
        caps.append((x.reshape(-1, x.shape[-1]).clone(), self.w(n).to(bf).clone(), out.reshape(-1, out.shape[-1]).clone()))
    return out


V.Emu.lin = cap
for case in ("tiny-rope", "small-learned"):
    d = os.path.join("tests/data/golden/hrm", case)
    arch = json.load(open(os.path.join(d, "case.json")))["arch"]
    W = V.load_file(os.path.join(d, "model.safetensors"))
    EB = V.load_file(os.path.join(d, "expected-bf16.safetensors"))
    caps.clear()
    with torch.no_grad():
        V.Emu(arch, W, {"silu": "step"}).run(EB["inputs"], EB["puzzle_identifiers"], 1)
    sel = caps[:8] + caps[-8:]
    for order in ("f64", "seq", "pair_odd_first", "ilp4", "ilp8", "ilp16", "pairilp2", "pairilp4", "pairilp8", "pairilp16"):
        tot = mis = 0
        for x2, w, out in sel:
            e = emu(x2.float(), w.float(), order)
            tot += e.numel()
            mis += int((e != out).sum())
        print("%-14s %-16s mismatches %d / %d" % (case, order, mis, tot), flush=True)
