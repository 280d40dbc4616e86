"""Re-runs the golden HRM cases (tests/data/golden/hrm) with PyTorch on CPU using
the official ACT v1 forward (models/hrm/hrm_act_v1.py + models/layers.py,
transcribed below with FlashAttention replaced by exact f32 attention, as the
golden README describes), compares every step with expected-{bf16,f32}, and
writes the bf16 intermediates of step 0, first L-level call, layer 0 to
OUT/<case>-block0.safetensors (BF16, the files in tests/data/torch-ops/).

    python3 tools/torch_hrm_probe.py tests/data/golden/hrm OUT

Needs torch, and safetensors or the stdlib stand-in in tools/pyshim/ (Debian 12's
python3-torch has none). Variants: attn a = softmax((q k^T) * s) v,
b = scaled_dot_product_attention, c = softmax((q s) k^T) v; scal b = python
scalars multiplied as bf16 (torch 1.13 behaviour), f = as f32 (torch 2.x);
mkldnn on/off for the bf16 GEMMs. The block-0 dump uses the closest variant."""
import json
import math
import os
import sys
import time

if __name__ == "__main__" and (len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help")):
    print(__doc__)
    sys.exit(0 if sys.argv[1:2] in (["-h"], ["--help"]) else 2)

import torch
import torch.nn.functional as F
try:
    from safetensors.torch import load_file, save_file
except ImportError:  # Debian's python3-torch (1.13) has no safetensors: the stdlib shim
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyshim"))
    from safetensors.torch import load_file, save_file

GOLD = sys.argv[1]
OUT = sys.argv[2]
LOG = open(os.path.join(OUT, "probe.log"), "w")


def log(*a):
    s = " ".join(str(x) for x in a)
    print(s)
    LOG.write(s + "\n")
    LOG.flush()


def rms_norm(h, eps=1e-5):
    dt = h.dtype
    h = h.to(torch.float32)
    var = h.square().mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + eps)
    return h.to(dt)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(q, k, cos, sin):
    od = q.dtype
    q = q.to(cos.dtype)
    k = k.to(cos.dtype)
    qe = (q * cos.unsqueeze(-2)) + (rotate_half(q) * sin.unsqueeze(-2))
    ke = (k * cos.unsqueeze(-2)) + (rotate_half(k) * sin.unsqueeze(-2))
    return qe.to(od), ke.to(od)


class HRM:
    def __init__(self, arch, W, dtype, attn="a", scal="f", rec=None):
        self.a = arch
        self.W = W
        self.dt = dtype
        self.attn_v = attn
        self.scal = scal
        self.rec = rec
        h = arch["hidden_size"]
        self.h = h
        self.heads = arch["num_heads"]
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
            self.cos_sin = (emb.cos(), emb.sin())
        else:
            self.cos_sin = None
        self.H_init = W["model.inner.H_init"].to(dtype)
        self.L_init = W["model.inner.L_init"].to(dtype)

    def w(self, n):
        return self.W["model.inner." + n]

    def lin(self, x, n, bias=None):
        return F.linear(x, self.w(n).to(x.dtype), bias.to(x.dtype) if bias is not None else None)

    def r(self, name, t):
        full = name.startswith("c00.L0.") or name == "x"
        if not full and not name.endswith((".in", ".h1", ".out")):
            return
        if self.rec is not None and name not in self.rec:
            self.rec[name] = t.detach().to(torch.float32).clone()

    def mul_scalar(self, c, x):
        if self.scal == "b":  # torch 1.13: the python scalar becomes a bf16 0-dim tensor
            return torch.tensor(c, dtype=x.dtype) * x
        return c * x

    def embed(self, inputs, pids):
        e = F.embedding(inputs.to(torch.int32), self.w("embed_tokens.embedding_weight").to(self.dt))
        if self.P:
            pe = self.w("puzzle_emb.weights")[pids.long()].to(self.dt)
            pad = self.P * self.h - pe.shape[-1]
            if pad > 0:
                pe = F.pad(pe, (0, pad))
            e = torch.cat((pe.view(-1, self.P, self.h), e), dim=-2)
        if self.a["pos_encodings"] == "learned":
            e = self.mul_scalar(0.707106781, e + self.w("embed_pos.embedding_weight").to(self.dt))
        return self.mul_scalar(math.sqrt(self.h), e)

    def attention(self, h, p, tag):
        B, S, _ = h.shape
        qkv = self.lin(h, p + "self_attn.qkv_proj.weight")
        self.r(tag + "qkv", qkv)
        qkv = qkv.view(B, S, 3 * self.heads, self.hd)
        q = qkv[:, :, : self.heads]
        k = qkv[:, :, self.heads: 2 * self.heads]
        v = qkv[:, :, 2 * self.heads:]
        if self.cos_sin is not None:
            q, k = apply_rope(q, k, *self.cos_sin)
            self.r(tag + "q_rope", q.reshape(B, S, -1))
            self.r(tag + "k_rope", k.reshape(B, S, -1))
        qf, kf, vf = (t.to(torch.float32).transpose(1, 2) for t in (q, k, v))
        sc = 1.0 / math.sqrt(self.hd)
        if self.attn_v == "a":
            s = torch.matmul(qf, kf.transpose(-1, -2)) * sc
            o = torch.matmul(torch.softmax(s, dim=-1), vf)
        elif self.attn_v == "b":
            o = F.scaled_dot_product_attention(qf, kf, vf)
        else:
            s = torch.matmul(qf * sc, kf.transpose(-1, -2))
            o = torch.matmul(torch.softmax(s, dim=-1), vf)
        o = o.transpose(1, 2).to(h.dtype).reshape(B, S, self.h)
        self.r(tag + "attn_o", o)
        out = self.lin(o, p + "self_attn.o_proj.weight")
        self.r(tag + "o_proj", out)
        return out

    def mlp(self, x, p, tag):
        gu = self.lin(x, p + "mlp.gate_up_proj.weight")
        self.r(tag + "gu", gu)
        g, u = gu.chunk(2, dim=-1)
        a = F.silu(g) * u
        self.r(tag + "act", a)
        d = self.lin(a, p + "mlp.down_proj.weight")
        self.r(tag + "down", d)
        return d

    def block(self, h, p, tag):
        self.r(tag + "in", h)
        h = rms_norm(h + self.attention(h, p, tag))
        self.r(tag + "h1", h)
        h = rms_norm(h + self.mlp(h, p, tag))
        self.r(tag + "out", h)
        return h

    def level(self, name, n, z, inj, call):
        z = z + inj
        for i in range(n):
            z = self.block(z, "%s.layers.%d." % (name, i), "c%02d.%s%d." % (call, name[0], i))
        return z

    def inner(self, zH, zL, inputs, pids):
        x = self.embed(inputs, pids)
        self.r("x", x)
        a = self.a
        call = 0
        for _h in range(a["H_cycles"]):
            for _l in range(a["L_cycles"]):
                zL = self.level("L_level", a["L_layers"], zL, zH + x, call)
                call += 1
            zH = self.level("H_level", a["H_layers"], zH, zL, call)
            call += 1
        logits = self.lin(zH, "lm_head.weight")[:, self.P:]
        q = self.lin(zH[:, 0], "q_head.weight", self.w("q_head.bias")).to(torch.float32)
        return zH, zL, logits, q[..., 0], q[..., 1]

    def run(self, inputs, pids, steps):
        B = inputs.shape[0]
        zH = torch.zeros(B, self.T, self.h, dtype=self.dt)
        zL = torch.zeros(B, self.T, self.h, dtype=self.dt)
        st = torch.zeros(B, dtype=torch.int32)
        halted = torch.ones(B, dtype=torch.bool)
        cur_in, cur_p = inputs.clone(), pids.clone()
        outs = []
        for k in range(steps):
            zH = torch.where(halted.view(-1, 1, 1), self.H_init, zH)
            zL = torch.where(halted.view(-1, 1, 1), self.L_init, zL)
            st = torch.where(halted, 0, st)
            cur_in = torch.where(halted.view(-1, 1), inputs, cur_in)
            cur_p = torch.where(halted, pids, cur_p)
            zH, zL, lg, qh, qc = self.inner(zH, zL, cur_in, cur_p)
            self.rec = None  # only step 0 is recorded
            st = st + 1
            halted = st >= self.a["halt_max_steps"]
            outs.append({"z_H": zH, "z_L": zL, "logits": lg, "q_halt_logits": qh,
                         "q_continue_logits": qc, "halted": halted.to(torch.int32)})
        return outs


def compare(outs, E, label):
    line = []
    worst = 0.0
    eqs = []
    for k, o in enumerate(outs):
        for f in ("logits", "z_H", "z_L", "q_halt_logits"):
            ref = E["step%d.%s" % (k, f)].to(torch.float64)
            ours = o[f].to(torch.float64)
            rel = ((ours - ref).norm() / ref.norm()).item()
            eq = (ours == ref).double().mean().item()
            worst = max(worst, rel)
            if f in ("z_H", "logits"):
                eqs.append("%s%d:%.3g/%.2f" % (f[0], k, rel, eq))
    log("  %-28s worst rel %.3g | %s" % (label, worst, " ".join(eqs)))
    return worst


def main():
    torch.manual_seed(0)
    log("torch", torch.__version__, "threads", torch.get_num_threads(), "mkldnn",
        torch.backends.mkldnn.is_available(), "cpu",
        getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", lambda: "?")())
    for case in ("tiny-rope", "small-learned"):
        d = os.path.join(GOLD, case)
        arch = json.load(open(os.path.join(d, "case.json")))["arch"]
        W = load_file(os.path.join(d, "model.safetensors"))
        for dtname, dt in (("bf16", torch.bfloat16), ("f32", torch.float32)):
            E = load_file(os.path.join(d, "expected-%s.safetensors" % dtname))
            steps = len([k for k in E if k.endswith(".logits")])
            inputs, pids = E["inputs"], E["puzzle_identifiers"]
            log("%s %s (%d steps)" % (case, dtname, steps))
            variants = [("a", "f", True), ("b", "f", True), ("c", "f", True), ("a", "b", True),
                        ("a", "f", False), ("a", "b", False)]
            if not hasattr(F, "scaled_dot_product_attention"):  # torch < 2.0: no SDPA variant
                variants = [v for v in variants if v[0] != "b"]
            if dtname == "f32":
                variants = [("a", "f", True)]
            best = None
            for av, sv, mk in variants:
                t0 = time.time()
                with torch.backends.mkldnn.flags(enabled=mk):
                    rec = {}
                    m = HRM(arch, W, dt, av, sv, rec)
                    with torch.no_grad():
                        outs = m.run(inputs, pids, steps)
                w = compare(outs, E, "attn=%s scal=%s mkldnn=%d (%.1fs)" % (av, sv, mk, time.time() - t0))
                if best is None or w < best[0]:
                    best = (w, rec, av, sv, mk)
            if dtname == "bf16":
                rec = best[1]
                keep = {("L0." + k[len("c00.L0."):] if k.startswith("c00.L0.") else k):
                        v.to(torch.bfloat16).contiguous()
                        for k, v in rec.items() if k == "x" or k.startswith("c00.L0.")}
                save_file(keep, os.path.join(OUT, "%s-block0.safetensors" % case),
                          metadata={"variant": "attn=%s scal=%s mkldnn=%d" % best[2:],
                                    "torch": torch.__version__})
                log("  dumped %d intermediates of the best variant" % len(rec))


main()
