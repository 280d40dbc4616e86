#!/usr/bin/env python3
"""PyTorch reference figures for one HRM "ACT step", run with the OFFICIAL HRM code.

    python3 bench/torch_anchor.py --hrm-src DIR [--batches 1,8,64,256] [--modes eager,reduce-overhead]
                                  [--iters 20] [--warmup 3] [--device cuda] [--json FILE]

DIR holds sapientinc/HRM's models/ and config/. The bare HierarchicalReasoningModel_ACTV1 (no
ACTLossHead) is built as pretrain.py's create_model does: config/arch/hrm_v1.yaml plus the
Sudoku-Extreme metadata (seq_len 81, vocab_size 11, num_puzzle_identifiers 1, causal False),
batch_size = the batch measured, bf16, random default-init weights, eval mode. A step is
`carry, out = model(carry=carry, batch=batch)` under inference_mode (as pretrain.py's evaluate),
feeding the returned carry back (in eval the ACT halts only at halt_max_steps). Modes: eager,
reduce-overhead (torch.compile with CUDA graphs), max-autotune-no-cudagraphs; compiled with
dynamic=False (as pretrain.py) around the whole ACT module, else around model.inner (printed).
Each (batch, mode) gets a fresh model, warm-up steps (the first one compiles: compile_s; compiled
modes warm up >= 3 times so CUDA graphs are recorded), then --iters steps timed one by one with
the device synchronised around each: median and min ms.

Substitutions, none changing the model's arithmetic:
- FlashAttention (layers.py imports flash_attn_func from flash_attn_interface or flash_attn) is
  not installed: a shim `flash_attn_interface` runs torch's scaled_dot_product_attention on the
  [batch, seq, heads, dim] inputs transposed to [b, h, s, d] and returns a contiguous [b, s, h, d]
  tensor, as FlashAttention 2 does. On the GPU, SDPA picks its own fused kernel.
- pydantic (only the config's BaseModel), where missing (the GPU image lacks it): a minimal
  BaseModel (annotated fields, defaults, int/float coercion, extra keys ignored, as pydantic).
- torch < 2 only (the CPU smoke test on Debian's torch 1.13; no-ops on torch 2.x): nn.Buffer
  emulated with register_buffer, optimizer.ParamsT defined, bare `@torch.no_grad` accepted,
  softmax attention for SDPA, int64 puzzle_identifiers (int32 can't index); no compile modes.

bench/gpu.sh runs it beside `hrmt bench` with the official sources carried along:
`python3 bench/torch_anchor.py --hrm-src DIR --json "$out/torch_anchor.json"`.
CPU smoke test: `... --device cpu --modes eager --batches 1,2 --iters 2 --warmup 1`.
"""
import argparse
import contextlib
import dataclasses
import importlib
import json
import math
import os
import re
import statistics
import sys
import time
import types

MODES = ("eager", "reduce-overhead", "max-autotune-no-cudagraphs")


def install_shims(torch):
    """Puts the substitutions listed in the docstring in place; returns notes on them."""
    nn, F, notes = torch.nn, torch.nn.functional, []

    def flash_attn_func(q, k, v, causal=False, **_):
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [b, s, h, d] -> [b, h, s, d]
        if hasattr(F, "scaled_dot_product_attention"):
            o = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        else:  # torch < 2.0
            s = q.float() @ k.float().transpose(-2, -1) / math.sqrt(q.shape[-1])
            if causal:
                s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
            o = (s.softmax(-1) @ v.float()).to(q.dtype)
        return o.transpose(1, 2).contiguous()
    sys.modules["flash_attn_interface"] = types.SimpleNamespace(flash_attn_func=flash_attn_func)

    try:
        import pydantic  # noqa: F401 (hrm_act_v1.py's config)
    except ImportError:
        class BaseModel:
            def __init__(self, **kw):
                ann = {}
                for c in reversed(type(self).__mro__):
                    ann.update(getattr(c, "__annotations__", {}))
                for name, typ in ann.items():
                    if name not in kw and not hasattr(type(self), name):
                        raise TypeError(f"{type(self).__name__}: field {name!r} missing")
                    val = kw.get(name, getattr(type(self), name, None))
                    setattr(self, name, typ(val) if typ in (int, float, str) else val)
        sys.modules["pydantic"] = types.SimpleNamespace(BaseModel=BaseModel)
        notes.append("pydantic missing: minimal BaseModel stand-in")

    if not hasattr(nn, "Buffer"):  # torch < 2.5
        setattr_ = nn.Module.__setattr__

        def module_setattr(self, name, value):
            if isinstance(value, torch.Tensor) and hasattr(value, "_anchor_buffer"):
                return self.register_buffer(name, value, persistent=value._anchor_buffer)
            setattr_(self, name, value)
        nn.Module.__setattr__ = module_setattr
        nn.Buffer = lambda data, persistent=True: setattr(data, "_anchor_buffer", persistent) or data
        notes.append("nn.Buffer emulated")
    import torch.optim.optimizer as optim_mod
    if not hasattr(optim_mod, "ParamsT"):  # torch < 2.2
        optim_mod.ParamsT = object
        notes.append("ParamsT aliased")
    try:
        torch.no_grad(lambda: None)
    except TypeError:  # torch < 2.0: no bare @torch.no_grad
        orig = torch.no_grad
        torch.no_grad = lambda fn=None: orig() if fn is None else orig()(fn)
        notes.append("bare @torch.no_grad accepted")
    if not hasattr(F, "scaled_dot_product_attention"):
        notes.append("no SDPA: softmax attention")
    try:
        torch.zeros(1)[torch.zeros(1, dtype=torch.int32)]
    except IndexError:
        notes.append("int32 indexing unsupported: puzzle_identifiers int64")
    return notes


def read_arch(path):
    """hrm_v1.yaml as a dict, ${.key} resolved; without PyYAML, its top-level scalars."""
    text = open(path).read()
    try:
        import yaml
        cfg = yaml.safe_load(text)
    except ImportError:
        cfg = {}
        for m in re.finditer(r"^(\w+):[ \t]*([^#\n]*?)[ \t]*(#.*)?$", text, re.M):
            v = m.group(2).strip("'\"")
            if re.fullmatch(r"-?\d+", v):
                v = int(v)
            elif re.fullmatch(r"-?\d*\.?\d+(e-?\d+)?", v):
                v = float(v)
            if v != "":
                cfg[m.group(1)] = v
    ref = {k: re.fullmatch(r"\$\{\.(\w+)\}", v) for k, v in cfg.items() if isinstance(v, str)}
    return {**cfg, **{k: cfg[m.group(1)] for k, m in ref.items() if m}}


def tree(fn, x):
    """Applies fn to every tensor in the carry (dataclasses and dicts of tensors)."""
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return dataclasses.replace(x, **{f.name: tree(fn, getattr(x, f.name)) for f in dataclasses.fields(x)})
    if isinstance(x, dict):
        return {k: tree(fn, v) for k, v in x.items()}
    return fn(x) if hasattr(x, "device") else x


def one_line(e):
    return f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"


def measure(torch, model_cls, arch, bsz, mode, args, notes):
    dev = torch.device(args.device)
    cuda = dev.type == "cuda"
    sync = (lambda: torch.cuda.synchronize(dev)) if cuda else (lambda: None)
    # The official code makes tensors on the default device (pretrain.py: `with torch.device("cuda")`).
    devctx = dev if hasattr(dev, "__enter__") else contextlib.nullcontext()
    cfg = {**{k: v for k, v in arch.items() if k not in ("name", "loss")}, "batch_size": bsz,
           "vocab_size": 11, "seq_len": 81, "num_puzzle_identifiers": 1, "causal": False,
           "forward_dtype": "bfloat16"}
    torch.manual_seed(0)
    with devctx:
        model = model_cls(cfg).to(dev).eval()
    off = [n for n, t in [*model.named_parameters(), *model.named_buffers()] if t.device.type != dev.type]
    if off:
        raise RuntimeError(f"not on {dev}: {', '.join(off)}")
    pid_dtype = torch.int64 if any("int32 indexing" in n for n in notes) else torch.int32
    batch = {"inputs": torch.randint(1, 11, (bsz, 81), dtype=torch.int32, device=dev),
             "labels": torch.randint(2, 11, (bsz, 81), dtype=torch.int32, device=dev),
             "puzzle_identifiers": torch.zeros(bsz, dtype=pid_dtype, device=dev)}
    with torch.inference_mode(), devctx:
        carry = tree(lambda t: t.to(dev), model.initial_carry(batch))
    step, what = model, None
    if mode != "eager" and not hasattr(torch, "compile"):
        raise RuntimeError(f"torch.compile needs torch >= 2.0 (this is {torch.__version__})")
    if mode != "eager":
        import torch._dynamo as dynamo
        from torch._dynamo.utils import counters
        dynamo.reset()
        skips = counters["inductor"]["cudagraph_skips"]
        step, what = torch.compile(model, mode=mode, dynamic=False), "whole ACT forward"
    mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    graphs = mode == "reduce-overhead" and cuda

    def timed(carry):
        sync()
        t0 = time.perf_counter()
        if graphs and mark:
            mark()
        with torch.inference_mode():
            carry, _ = step(carry=carry, batch=batch)
        sync()
        dt = time.perf_counter() - t0
        if graphs:  # CUDA-graph outputs are overwritten by the next replay
            carry = tree(lambda t: t.clone(), carry)
        return carry, dt

    try:
        carry, first = timed(carry)
    except Exception as e:  # noqa: BLE001
        if mode == "eager":
            raise
        print(f"  batch {bsz} {mode}: compiling the whole ACT forward failed ({one_line(e)}); "
              "compiling model.inner instead", flush=True)
        dynamo.reset()
        model.inner = torch.compile(model.inner, mode=mode, dynamic=False)
        step, what = model, "model.inner"
        carry, first = timed(carry)
    for _ in range(max(args.warmup, 1 if mode == "eager" else 3) - 1):
        carry, _ = timed(carry)
    times = []
    for _ in range(args.iters):
        carry, dt = timed(carry)
        times.append(dt * 1e3)
    if graphs and counters["inductor"]["cudagraph_skips"] > skips:
        what += ", CUDA graphs SKIPPED (TORCH_LOGS=perf_hints says why)"
    return {"median_ms": statistics.median(times), "min_ms": min(times),
            "compile_s": None if mode == "eager" else first, "first_call_s": first, "compiled": what}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hrm-src", required=True, help="folder holding the official models/ and config/")
    ap.add_argument("--batches", default="1,8,64,256")
    ap.add_argument("--modes", default="eager,reduce-overhead", help=", ".join(MODES))
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",") if b]
    modes = [m for m in args.modes.split(",") if m]
    if any(m not in MODES for m in modes) or args.iters < 1:
        ap.error(f"modes: {', '.join(MODES)}; --iters >= 1")
    yml = os.path.join(args.hrm_src, "config", "arch", "hrm_v1.yaml")
    if not (os.path.isfile(yml) and os.path.isdir(os.path.join(args.hrm_src, "models"))):
        sys.exit(f"torch_anchor: {args.hrm_src} lacks the official models/ or {yml}")
    try:
        import torch
    except ImportError:
        sys.exit(f"torch_anchor: PyTorch is not importable by {sys.executable}")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        sys.exit("torch_anchor: CUDA is not available to this PyTorch (try --device cpu)")
    notes = install_shims(torch)
    sys.path.insert(0, os.path.abspath(args.hrm_src))
    arch = read_arch(yml)
    mod_name, cls_name = arch["name"].split("@")  # as pretrain.py's load_model_class
    try:
        model_cls = getattr(importlib.import_module("models." + mod_name), cls_name)
    except Exception as e:  # noqa: BLE001
        sys.exit(f"torch_anchor: cannot import the official {arch['name']}: {one_line(e)}")
    gpu = torch.cuda.get_device_name(torch.device(args.device)) if args.device.startswith("cuda") else "CPU"
    attn = "SDPA" if hasattr(torch.nn.functional, "scaled_dot_product_attention") else "softmax"
    tv = ".".join(torch.__version__.split(".")[:2])
    what = f"official HRM ACT v1, torch {tv}, bf16, {attn} attention, {gpu}"
    print(f"torch {torch.__version__}, device {args.device}: {gpu}", flush=True)
    print(f"arch: {', '.join(f'{k}={v}' for k, v in arch.items() if k != 'loss')}", flush=True)
    if notes:
        print(f"compat: {'; '.join(notes)}", flush=True)
    results = []
    for bsz in batches:
        for mode in modes:
            row = dict(batch=bsz, mode=mode, median_ms=None, min_ms=None, compile_s=None, what=what)
            try:
                row.update(measure(torch, model_cls, arch, bsz, mode, args, notes))
                extra = (f"compile {row['compile_s']:.1f} s ({row['compiled']})" if row["compiled"]
                         else f"first call {row['first_call_s'] * 1e3:.1f} ms")
                print(f"batch {bsz:4d}  {mode:27s} median {row['median_ms']:9.3f} ms  "
                      f"min {row['min_ms']:9.3f} ms  {extra}", flush=True)
            except Exception as e:  # noqa: BLE001
                row["error"] = one_line(e)
                print(f"batch {bsz:4d}  {mode:27s} FAILED {row['error']}", flush=True)
            results.append(row)
            if args.json:  # after every row: a run cut short keeps what it measured
                with open(args.json, "w") as f:
                    json.dump(results, f, indent=1)
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
    print(f"\nPyTorch reference, median ms per ACT step ({args.iters} steps): {what}")
    print(" | ".join(["batch"] + [f"{m} ms" for m in modes]))
    for bsz in batches:
        ms = {r["mode"]: r["median_ms"] for r in results if r["batch"] == bsz}
        print(" | ".join([f"{bsz:5d}"] + [("fail" if ms[m] is None else f"{ms[m]:.3f}").rjust(len(m) + 3)
                                          for m in modes]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all(r["median_ms"] is not None for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
