"""Ratio table: for each variant of bf16 rounding emulation, per-step relative L2 distance of
logits / z_H / z_L / q_halt / q_continue to expected-bf16, divided by the same distance between
expected-f32 and expected-bf16. Runs under any torch (1.13 .. 2.x) on CPU.

    python3 tools/investigate/variants.py tests/data/golden/hrm [variant-filter-substring ...]
"""
import json, math, os, sys, time
import torch
import torch.nn.functional as F
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
try:
    from safetensors.torch import load_file
except Exception:  # pragma: no cover
    raise
GOLD = sys.argv[1] if len(sys.argv) > 1 else ""
FILT = sys.argv[2:]
bf = torch.bfloat16


def rb(t):  # round f32/f64 tensor to bf16 and back to f32
    return t.float().to(bf).float()


class Emu:
    def __init__(self, arch, W, cfg):
        self.a, self.W, self.cfg = arch, W, cfg
        h = arch["hidden_size"]
        self.h, self.heads = h, arch["num_heads"]
        self.hd = h // self.heads
        ndim = arch.get("puzzle_emb_ndim", 0)
        self.P = -(ndim // -h) if ndim > 0 else 0
        self.T = arch["seq_len"] + self.P
        if arch["pos_encodings"] == "rope":
            dim = self.hd
            inv = 1.0 / (10000.0 ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
            t = torch.arange(self.T, dtype=torch.float32)
            fr = torch.outer(t, inv)
            emb = torch.cat((fr, fr), dim=-1)
            self.cos, self.sin = emb.cos(), emb.sin()
        else:
            self.cos = None
        self.H_init = W["model.inner.H_init"].to(bf)
        self.L_init = W["model.inner.L_init"].to(bf)
        self.wc = {}

    def w(self, n):
        return self.W["model.inner." + n]

    # ---------------- linear ----------------
    def lin(self, x, n, bias=None):
        mode = self.cfg.get("lin", "native")
        Wb = self.w(n).to(bf)
        b = bias.to(bf) if bias is not None else None
        if mode == "native":
            return F.linear(x, Wb, b)
        shp = x.shape
        x2 = x.reshape(-1, shp[-1]).float()
        w = Wb.float()
        K = x2.shape[1]
        if mode == "f64":
            acc = x2.double() @ w.double().t()
            if b is not None:
                acc = acc + b.double()
            out = acc.float().to(bf)
        elif mode in ("f32seq", "prodbf16_f32acc", "bf16acc", "bf16acc_prodbf16"):
            acc = torch.zeros(x2.shape[0], w.shape[0], dtype=torch.float32)
            if b is not None and mode.startswith("bf16acc"):
                acc = acc + b.float()
            for k in range(K):
                p = x2[:, k:k + 1] * w[:, k]
                if mode in ("prodbf16_f32acc", "bf16acc_prodbf16"):
                    p = rb(p)
                acc = acc + p
                if mode.startswith("bf16acc"):
                    acc = rb(acc)
            if b is not None and not mode.startswith("bf16acc"):
                acc = acc + b.float()
            out = acc.to(bf)
        elif mode in ("ilp4_f32", "ilp4_bf16"):
            ps = [torch.zeros(x2.shape[0], w.shape[0], dtype=torch.float32) for _ in range(4)]
            for k in range(K):
                p = x2[:, k:k + 1] * w[:, k]
                if mode == "ilp4_bf16":
                    p = rb(p)
                ps[k % 4] = ps[k % 4] + p
                if mode == "ilp4_bf16":
                    ps[k % 4] = rb(ps[k % 4])
            acc = ps[0]
            for j in range(1, 4):
                acc = acc + ps[j]
                if mode == "ilp4_bf16":
                    acc = rb(acc)
            if b is not None:
                acc = acc + b.float()
            out = acc.to(bf)
        elif mode == "dpbf16":  # oneDNN avx512_bf16 vdpbf16ps order: one f32 acc over K, per pair odd k then even k
            acc = torch.zeros(x2.shape[0], w.shape[0], dtype=torch.float32)
            for k in range(K):
                kk = k ^ 1 if (k ^ 1) < K else k
                acc = acc + x2[:, kk:kk + 1] * w[:, kk]
            if b is not None:
                acc = acc + b.float()
            out = acc.to(bf)
        elif mode.startswith("blk"):
            B = int(mode[3:])
            acc = torch.zeros(x2.shape[0], w.shape[0], dtype=torch.float32)
            for k0 in range(0, K, B):
                part = (x2[:, k0:k0 + B].double() @ w[:, k0:k0 + B].double().t()).float()
                acc = rb(acc + part)
            if b is not None:
                acc = acc + b.float()
            out = acc.to(bf)
        else:
            raise ValueError(mode)
        return out.reshape(*shp[:-1], -1)

    # ---------------- elementwise ----------------
    def silu(self, g):
        mode = self.cfg.get("silu", "native")
        if mode == "native":
            return F.silu(g)
        gf = g.float()
        if mode == "ideal":
            g64 = g.double()
            return (g64 / (1 + torch.exp(-g64))).float().to(bf)
        if mode == "step":  # bf16( x / bf16(1 + bf16(exp(-x))) )
            e = rb(torch.exp(-gf))
            d = rb(1.0 + e)
            return (gf / d).to(bf)
        if mode == "step_noexp":  # only the denominator rounded
            return (gf / rb(1.0 + torch.exp(-gf))).to(bf)
        raise ValueError(mode)

    def scal(self, c, x):
        mode = self.cfg.get("scal", "native")
        if mode == "native":
            return c * x
        if mode == "b":
            return (rb(torch.tensor(c)) * x.float()).to(bf)
        if mode == "f":
            return (torch.tensor(c, dtype=torch.float32) * x.float()).to(bf)
        raise ValueError(mode)

    def rms(self, hs, eps=1e-5):
        mode = self.cfg.get("rms", "f32")
        h = hs.float()
        if mode == "f32":
            var = h.square().mean(-1, keepdim=True)
            return (h * torch.rsqrt(var + eps)).to(bf)
        if mode == "bf16var":
            var = rb(rb(rb(h.square()).mean(-1, keepdim=True)) + eps)
            return (h * rb(torch.rsqrt(var))).to(bf)
        raise ValueError(mode)

    def rope(self, q, k):
        mode = self.cfg.get("rope", "f32")
        cos, sin = self.cos.unsqueeze(-2), self.sin.unsqueeze(-2)

        def rot(x):
            x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
            return torch.cat((-x2, x1), dim=-1)
        if mode == "f32":
            return ((q.float() * cos + rot(q.float()) * sin).to(bf),
                    (k.float() * cos + rot(k.float()) * sin).to(bf))
        if mode == "bf16":
            cb, sb = rb(cos), rb(sin)
            f = lambda x: (rb(x.float() * cb) + rb(rot(x.float()) * sb)).to(bf)
            return f(q), f(k)
        raise ValueError(mode)

    def attention(self, h, p):
        B, S, _ = h.shape
        qkv = self.lin(h, p + "self_attn.qkv_proj.weight").view(B, S, 3 * self.heads, self.hd)
        q, k, v = qkv[:, :, :self.heads], qkv[:, :, self.heads:2 * self.heads], qkv[:, :, 2 * self.heads:]
        if self.cos is not None:
            q, k = self.rope(q, k)
        qf, kf, vf = (t.float().transpose(1, 2) for t in (q, k, v))
        sc = 1.0 / math.sqrt(self.hd)
        mode = self.cfg.get("attn", "f32")
        s = torch.matmul(qf, kf.transpose(-1, -2)) * sc
        if mode in ("sround", "both"):
            s = rb(s)
        pr = torch.softmax(s, dim=-1)
        if mode in ("pround", "both"):
            pr = rb(pr)
        o = torch.matmul(pr, vf)
        o = o.transpose(1, 2).to(bf).reshape(B, S, self.h)
        return self.lin(o, p + "self_attn.o_proj.weight")

    def mlp(self, x, p):
        gu = self.lin(x, p + "mlp.gate_up_proj.weight")
        g, u = gu.chunk(2, dim=-1)
        return self.lin(self.silu(g) * u, p + "mlp.down_proj.weight")

    def block(self, h, p):
        h = self.rms(h + self.attention(h, p))
        return self.rms(h + self.mlp(h, p))

    def level(self, name, n, z, inj):
        z = z + inj
        for i in range(n):
            z = self.block(z, "%s.layers.%d." % (name, i))
        return z

    def embed(self, inputs, pids):
        e = F.embedding(inputs.long(), self.w("embed_tokens.embedding_weight").to(bf))
        if self.P:
            pe = self.w("puzzle_emb.weights")[pids.long()].to(bf)
            pad = self.P * self.h - pe.shape[-1]
            if pad > 0:
                pe = F.pad(pe, (0, pad))
            e = torch.cat((pe.view(-1, self.P, self.h), e), dim=-2)
        if self.a["pos_encodings"] == "learned":
            e = self.scal(0.707106781, e + self.w("embed_pos.embedding_weight").to(bf))
        return self.scal(math.sqrt(self.h), e)

    def inner(self, zH, zL, inputs, pids):
        x = self.embed(inputs, pids)
        a = self.a
        for _h in range(a["H_cycles"]):
            for _l in range(a["L_cycles"]):
                zL = self.level("L_level", a["L_layers"], zL, zH + x)
            zH = self.level("H_level", a["H_layers"], zH, zL)
        logits = self.lin(zH, "lm_head.weight")[:, self.P:]
        q = self.lin(zH[:, 0], "q_head.weight", self.w("q_head.bias")).float()
        return zH, zL, logits, q[..., 0], q[..., 1]

    def run(self, inputs, pids, steps):
        B = inputs.shape[0]
        zH = torch.zeros(B, self.T, self.h, dtype=bf)
        zL = torch.zeros(B, self.T, self.h, dtype=bf)
        st = torch.zeros(B, dtype=torch.int32)
        halted = torch.ones(B, dtype=torch.bool)
        cur_in, cur_p = inputs.clone(), pids.clone()
        outs = []
        for _ in range(steps):
            zH = torch.where(halted.view(-1, 1, 1), self.H_init, zH)
            zL = torch.where(halted.view(-1, 1, 1), self.L_init, zL)
            st = torch.where(halted, torch.zeros_like(st), st)
            cur_in = torch.where(halted.view(-1, 1), inputs, cur_in)
            cur_p = torch.where(halted, pids, cur_p)
            zH, zL, lg, qh, qc = self.inner(zH, zL, cur_in, cur_p)
            st = st + 1
            halted = st >= self.a["halt_max_steps"]
            outs.append({"logits": lg, "z_H": zH, "z_L": zL, "q_halt_logits": qh, "q_continue_logits": qc})
        return outs


FIELDS = ("logits", "z_H", "z_L", "q_halt_logits", "q_continue_logits")


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm())


VARIANTS = [
    ("native", {}),
    ("lin=f64", {"lin": "f64"}),
    ("silu=ideal", {"silu": "ideal"}),
    ("silu=step", {"silu": "step"}),
    ("silu=step_noexp", {"silu": "step_noexp"}),
    ("scal=b", {"scal": "b"}),
    ("scal=f", {"scal": "f"}),
    ("silu=step scal=b", {"silu": "step", "scal": "b"}),
    ("silu=step scal=b lin=f64", {"silu": "step", "scal": "b", "lin": "f64"}),
    ("silu=ideal scal=f lin=f64 (2.x-like)", {"silu": "ideal", "scal": "f", "lin": "f64"}),
    ("lin=f32seq", {"lin": "f32seq"}),
    ("lin=dpbf16", {"lin": "dpbf16"}),
    ("lin=dpbf16 silu=step scal=b", {"lin": "dpbf16", "silu": "step", "scal": "b"}),
    ("lin=dpbf16 silu=step scal=f", {"lin": "dpbf16", "silu": "step", "scal": "f"}),
    ("lin=dpbf16 silu=ideal scal=b", {"lin": "dpbf16", "silu": "ideal", "scal": "b"}),
    ("lin=f32seq silu=step scal=b", {"lin": "f32seq", "silu": "step", "scal": "b"}),
    ("lin=ilp4_f32", {"lin": "ilp4_f32"}),
    ("lin=prodbf16_f32acc", {"lin": "prodbf16_f32acc"}),
    ("lin=bf16acc", {"lin": "bf16acc"}),
    ("lin=bf16acc_prodbf16", {"lin": "bf16acc_prodbf16"}),
    ("lin=ilp4_bf16", {"lin": "ilp4_bf16"}),
    ("lin=blk16", {"lin": "blk16"}),
    ("lin=blk32", {"lin": "blk32"}),
    ("lin=blk64", {"lin": "blk64"}),
    ("lin=blk128", {"lin": "blk128"}),
    ("lin=blk256", {"lin": "blk256"}),
    ("attn=sround", {"attn": "sround"}),
    ("attn=pround", {"attn": "pround"}),
    ("attn=both", {"attn": "both"}),
    ("rms=bf16var", {"rms": "bf16var"}),
    ("rope=bf16", {"rope": "bf16"}),
    ("silu=step scal=b lin=bf16acc", {"silu": "step", "scal": "b", "lin": "bf16acc"}),
    ("silu=step scal=b lin=blk32", {"silu": "step", "scal": "b", "lin": "blk32"}),
]


def main():
    torch.set_num_threads(int(os.environ.get("NT", "4")))
    print("torch", torch.__version__, "threads", torch.get_num_threads())
    cases = {}
    for case in ("tiny-rope", "small-learned"):
        d = os.path.join(GOLD, case)
        arch = json.load(open(os.path.join(d, "case.json")))["arch"]
        W = load_file(os.path.join(d, "model.safetensors"))
        EB = load_file(os.path.join(d, "expected-bf16.safetensors"))
        EF = load_file(os.path.join(d, "expected-f32.safetensors"))
        steps = len([k for k in EB if k.endswith(".logits")])
        gap = {(s, f): rel(EF["step%d.%s" % (s, f)], EB["step%d.%s" % (s, f)]) for s in range(steps) for f in FIELDS}
        cases[case] = (arch, W, EB, steps, gap)
        print("%s gap(f32 vs bf16) step0 logits %.3g z_H %.3g; last step logits %.3g" % (
            case, gap[(0, "logits")], gap[(0, "z_H")], gap[(steps - 1, "logits")]))
    print("ratio = rel(variant, exp-bf16)/rel(exp-f32, exp-bf16). cols per case: step0 logits,zH,zL,qh | max over all steps&fields | mean | eq(z_H step0)")
    for name, cfg in VARIANTS:
        if FILT and not any(f in name for f in FILT):
            continue
        t0 = time.time()
        line = "%-38s" % name
        for case, (arch, W, EB, steps, gap) in cases.items():
            m = Emu(arch, W, cfg)
            with torch.no_grad():
                outs = m.run(EB["inputs"], EB["puzzle_identifiers"], steps)
            rs = {}
            for s, o in enumerate(outs):
                for f in FIELDS:
                    rs[(s, f)] = rel(o[f], EB["step%d.%s" % (s, f)]) / gap[(s, f)]
            eq = float((outs[0]["z_H"] == EB["step0.z_H"].to(bf)).double().mean())
            line += " | %s %.2f %.2f %.2f %.2f max %.2f mean %.2f eq %.2f" % (
                case[:5], rs[(0, "logits")], rs[(0, "z_H")], rs[(0, "z_L")], rs[(0, "q_halt_logits")],
                max(rs.values()), sum(rs.values()) / len(rs), eq)
        print(line + " (%.0fs)" % (time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
