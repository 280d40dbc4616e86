"""One ACT step of the default HRM (official Sudoku config, bf16) in PyTorch
eager versus `hrmt bench`, side by side in one run, alternating rounds.

    python3 bench/pytorch_vs_hrmt.py BUILD_DIR [--threads 2] [--batches 1,8] [--rounds 3]
                                     [--modes tiered|baseline,tiered] [--json FILE]

PyTorch runs the official ACT v1 forward as transcribed in
tools/torch_hrm_probe.py (exact f32 attention instead of FlashAttention, as the
golden vectors were made); Debian 12's python3-torch (1.13) is what the issue's
reference figures (139 ms at batch 1, 423 ms at batch 8) were measured with.
Prints per batch: PyTorch ms/step, hrmt ms/step per schedule (tiered by
default; --modes baseline,tiered runs both in one `hrmt bench --mode compare`),
and the speed-ups; --json writes the same figures. Medians over rounds; each
round times `--iters` steps after one warm-up. hrmt runs on the table
`hrmt info` shows (HRMT_ISA picks another).

--linear-server is hrmt-bench-gemm's torch co-process (see linear_server)."""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_transcription():
    """Imports the HRM class from tools/torch_hrm_probe.py without running its main part."""
    path = os.path.join(HERE, "..", "tools", "torch_hrm_probe.py")
    src = open(path).read()
    cut = src.index("\ndef main") if "\ndef main" in src else None
    # __file__: the probe finds its stdlib safetensors shim next to itself.
    ns = {"__name__": "hrm_transcription", "__file__": path}
    # The probe reads sys.argv at import; give it harmless values and a temp OUT dir.
    tmp = tempfile.mkdtemp()
    saved = sys.argv
    sys.argv = ["probe", tmp, tmp]
    try:
        exec(compile(src[:cut] if cut else src, "torch_hrm_probe.py", "exec"), ns)
    finally:
        sys.argv = saved
    return ns["HRM"]


def default_arch():
    return {"hidden_size": 512, "num_heads": 8, "expansion": 4, "H_layers": 4, "L_layers": 4,
            "H_cycles": 2, "L_cycles": 2, "seq_len": 81, "vocab_size": 11,
            "puzzle_emb_ndim": 512, "num_puzzle_identifiers": 1, "pos_encodings": "rope",
            "halt_max_steps": 16}


def random_weights(torch, a):
    h = a["hidden_size"]
    inter = int(round(a["expansion"] * h * 2 / 3))
    inter = (inter + 255) // 256 * 256
    g = torch.Generator().manual_seed(0)
    W = {}

    def r(name, *shape):
        W["model.inner." + name] = torch.randn(*shape, generator=g) / math.sqrt(shape[-1])

    for lvl, n in (("H_level", a["H_layers"]), ("L_level", a["L_layers"])):
        for i in range(n):
            p = "%s.layers.%d." % (lvl, i)
            r(p + "self_attn.qkv_proj.weight", 3 * h, h)
            r(p + "self_attn.o_proj.weight", h, h)
            r(p + "mlp.gate_up_proj.weight", 2 * inter, h)
            r(p + "mlp.down_proj.weight", h, inter)
    r("embed_tokens.embedding_weight", a["vocab_size"], h)
    r("lm_head.weight", a["vocab_size"], h)
    r("q_head.weight", 2, h)
    W["model.inner.q_head.bias"] = torch.zeros(2)
    r("puzzle_emb.weights", a["num_puzzle_identifiers"], a["puzzle_emb_ndim"])
    W["model.inner.H_init"] = (torch.randn(h, generator=g)).to(torch.bfloat16)
    W["model.inner.L_init"] = (torch.randn(h, generator=g)).to(torch.bfloat16)
    return W


def torch_step_ms(torch, model, batch, iters):
    a = model.a
    inputs = torch.randint(1, a["vocab_size"], (batch, a["seq_len"]), dtype=torch.int32)
    pids = torch.zeros(batch, dtype=torch.long)
    zH = model.H_init.expand(batch, model.T, model.h).contiguous()
    zL = model.L_init.expand(batch, model.T, model.h).contiguous()
    with torch.no_grad():
        model.inner(zH, zL, inputs, pids)  # warm-up
        t = []
        for _ in range(iters):
            t0 = time.perf_counter()
            model.inner(zH, zL, inputs, pids)
            t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def hrmt_step_ms(build, batch, iters, threads, modes):
    """{mode: median ms per step} for the schedules in `modes`."""
    mode = modes[0] if len(modes) == 1 else "compare"
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [os.path.join(build, "hrmt"), "bench", "--mode", mode, "--batch-sizes",
               str(batch), "--seq-lens", "81", "--iterations", str(iters), "--warmup", "1",
               "--threads", str(threads), "--quiet", "--output", f.name]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        rows = json.load(open(f.name))
    return {r["mode"]: r["total_inference_latency_ms"]["median"] for r in rows}


def linear_server(threads):
    """hrmt-bench-gemm's co-process: per request line "M N K min_ms" times
    torch.nn.functional.linear on BF16 a [M, K], w [N, K] (new random tensors
    per shape) like the bench times its own methods (repeat the call until
    min_ms passes) and answers seconds per call. Says "ready <version>" first;
    exits 1 when torch does not import (the bench then leaves torch out)."""
    try:
        import torch
    except ImportError:
        return 1
    torch.set_num_threads(threads)
    F = torch.nn.functional
    print("ready torch %s, %d threads, F.linear bf16" % (torch.__version__, threads), flush=True)
    cache = {}
    for line in sys.stdin:
        try:
            m, n, k, min_ms = line.split()
            m, n, k, min_ms = int(m), int(n), int(k), float(min_ms)
        except ValueError:
            print("error: bad request", flush=True)
            continue
        key = (m, n, k)
        if key not in cache:
            cache.clear()
            g = torch.Generator().manual_seed(m * 1000003 + n * 1009 + k)
            cache[key] = ((torch.rand(m, k, generator=g) - 0.5).to(torch.bfloat16),
                          (torch.rand(n, k, generator=g) - 0.5).to(torch.bfloat16))
        a, w = cache[key]
        with torch.no_grad():
            iters, t0 = 0, time.perf_counter()
            while True:
                F.linear(a, w)
                iters += 1
                t = time.perf_counter() - t0
                if t >= min_ms * 1e-3:
                    break
        print("%.9g" % (t / iters), flush=True)
    return 0


def main():
    if "--linear-server" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--linear-server", action="store_true")
        ap.add_argument("--threads", type=int, default=2)
        sys.exit(linear_server(ap.parse_args().threads))
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--modes", default="tiered", help="tiered, baseline or baseline,tiered")
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args()
    modes = args.modes.split(",")
    if not modes or any(m not in ("tiered", "baseline") for m in modes):
        ap.error("--modes: tiered, baseline or baseline,tiered")
    import torch
    torch.set_num_threads(args.threads)
    HRM = load_transcription()
    a = default_arch()
    model = HRM(a, random_weights(torch, a), torch.bfloat16)
    print("torch %s, %d threads, bf16, default HRM (hidden 512, 4/4 layers, 2/2 cycles, T 82)"
          % (torch.__version__, args.threads))
    head = "%6s %14s" % ("batch", "pytorch ms")
    for m in modes:
        head += " %14s %9s" % ("hrmt %s ms" % m, "speed-up")
    print(head)
    results = []
    for b in [int(x) for x in args.batches.split(",")]:
        pt, ours = [], {m: [] for m in modes}
        for _ in range(args.rounds):  # alternate so both see the same machine state
            pt.append(torch_step_ms(torch, model, b, args.iters))
            got = hrmt_step_ms(args.build, b, args.iters, args.threads, modes)
            for m in modes:
                ours[m].append(got[m])
        p = statistics.median(pt)
        row = {"batch": b, "threads": args.threads, "pytorch_ms": p}
        line = "%6d %14.1f" % (b, p)
        for m in modes:
            o = statistics.median(ours[m])
            row["hrmt_%s_ms" % m] = o
            line += " %14.1f %8.2fx" % (o, p / o)
        print(line, flush=True)
        results.append(row)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "threads": args.threads, "rows": results}, f)


if __name__ == "__main__":
    main()
