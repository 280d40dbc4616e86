"""Op-level check under the local torch: for every primitive op of the HRM forward (run as in
torch_hrm_probe.py, attn=a, defaults), compare the native bf16 result with an 'ideal' one
(computed in f64 from the same bf16 inputs, rounded once to bf16). Prints mismatch fraction and
max |diff| in bf16 ulps per op kind."""
import collections, json, math, os, sys
import torch
import torch.nn.functional as F
sys.argv = [sys.argv[0], "tests/data/golden/hrm", "/tmp"]
import importlib.util
spec = importlib.util.spec_from_file_location("probe", os.path.join(os.path.dirname(__file__), "..", "torch_hrm_probe.py"))
src = open(spec.origin).read().replace("\nmain()\n", "\n")
probe = {}
exec(compile(src, spec.origin, "exec"), probe)
HRM, load_file = probe["HRM"], probe["load_file"]

stats = collections.defaultdict(lambda: [0, 0, 0.0])


def ulp(ref):
    r = ref.to(torch.float64).abs().clamp_min(1e-30)
    e = torch.floor(torch.log2(r))
    return torch.pow(2.0, e - 7)


def note(kind, nat, ide):
    nat64, ide64 = nat.to(torch.float64), ide.to(torch.float64)
    d = (nat64 - ide64).abs()
    s = stats[kind]
    s[0] += d.numel()
    s[1] += int((d > 0).sum())
    s[2] = max(s[2], float((d / ulp(ide64)).max()))


class Probe(HRM):
    def lin(self, x, n, bias=None):
        W = self.w(n).to(x.dtype)
        out = F.linear(x, W, bias.to(x.dtype) if bias is not None else None)
        if x.dtype == torch.bfloat16:
            ide = x.double() @ W.double().t()
            if bias is not None:
                ide = ide + bias.to(x.dtype).double()
            note("linear K=%d" % x.shape[-1], out, ide.float().bfloat16())
        return out

    def mlp(self, x, p, tag):
        gu = self.lin(x, p + "mlp.gate_up_proj.weight")
        g, u = gu.chunk(2, dim=-1)
        s = F.silu(g)
        g64 = g.double()
        note("silu", s, (g64 / (1 + torch.exp(-g64))).float().bfloat16())
        # what 1.12-style bf16-step silu would give
        e = torch.exp(-g.float()).bfloat16().float()
        d = (1 + e).bfloat16().float()
        note("silu-vs-stepwise-bf16", s, (g.float() / d).bfloat16())
        a = s * u
        note("silu*u", a, (s.double() * u.double()).float().bfloat16())
        return self.lin(a, p + "mlp.down_proj.weight")

    def block(self, h, p, tag):
        at = self.attention(h, p, tag)
        r = h + at
        note("add", r, (h.double() + at.double()).float().bfloat16())
        n1 = probe["rms_norm"](r)
        r64 = r.double()
        note("rms_norm", n1, (r64 * torch.rsqrt(r64.square().mean(-1, keepdim=True) + 1e-5)).float().bfloat16())
        m = self.mlp(n1, p, tag)
        r2 = n1 + m
        n2 = probe["rms_norm"](r2)
        return n2


for case in ("tiny-rope", "small-learned"):
    d = os.path.join("tests/data/golden/hrm", case)
    arch = json.load(open(os.path.join(d, "case.json")))["arch"]
    W = load_file(os.path.join(d, "model.safetensors"))
    E = load_file(os.path.join(d, "expected-bf16.safetensors"))
    steps = len([k for k in E if k.endswith(".logits")])
    stats.clear()
    m = Probe(arch, W, torch.bfloat16, "a", "f", None)
    with torch.no_grad():
        outs = m.run(E["inputs"], E["puzzle_identifiers"], steps)
    print(case, "torch", torch.__version__, "step0 logits rel to expected:",
          float((outs[0]["logits"].double() - E["step0.logits"].double()).norm() / E["step0.logits"].double().norm()))
    for k, (n, mis, mu) in sorted(stats.items()):
        print("  %-24s n=%8d mismatch %.4f max %.1f ulp" % (k, n, mis / n, mu))
