#!/usr/bin/env python3
"""The GPU step table of bench/gpu.sh: hrmt's ACT step (both schedules) next to
PyTorch's on the official HRM code, all measured in the same call.

    python3 bench/gpu_table.py STEPS.json [--pinned STEPS_PINNED.json] [--persist STEPS_PERSIST.json]
                               [--grid STEPS_GRID.json] [--torch TORCH.json]

STEPS.json: `hrmt bench --backend cuda --mode compare --output` (median ms per
step, tiered and baseline, outputs_identical); --pinned: the same run with
HRMT_CUDA_GEMM_TUNE=0 (the pinned GEMM algorithm at every M); --persist: the
same with HRMT_CUDA_L_PERSIST=1 (tiered = the persistent L-level kernel); --grid:
the same with HRMT_CUDA_GRID=1 (baseline = each level as one grid-wide kernel); --torch:
bench/torch_anchor.py's --json. Prints one row per batch and, last, whether
hrmt's faster schedule beats torch.compile + CUDA graphs at every batch.
Exit status 0 when the table could be made (whoever wins)."""
import argparse
import json
import sys


def steps(path):
    """{batch: {mode: (median ms, outputs_identical)}}."""
    out = {}
    for r in json.load(open(path)):
        ms = r["total_inference_latency_ms"]["median"]
        out.setdefault(r["batch_size"], {})[r["mode"]] = (ms, r.get("outputs_identical"))
    return out


def torch_rows(path):
    """{batch: {mode: median ms or None}}."""
    out = {}
    for r in json.load(open(path)):
        out.setdefault(r["batch"], {})[r["mode"]] = r.get("median_ms")
    return out


def fmt(v, spec="%.3f"):
    return spec % v if isinstance(v, (int, float)) else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("steps")
    ap.add_argument("--pinned")
    ap.add_argument("--persist")
    ap.add_argument("--grid")
    ap.add_argument("--torch")
    a = ap.parse_args()
    hs = steps(a.steps)
    ps = steps(a.pinned) if a.pinned else {}
    ls = steps(a.persist) if a.persist else {}
    gs = steps(a.grid) if a.grid else {}
    ts = torch_rows(a.torch) if a.torch else {}
    head = ("batch", "baseline", "grid-level", "g/b", "tiered", "t/b", "identical", "persistent-L", "p/b", "identical",
            "pinned-GEMM", "torch eager", "torch.compile+graphs", "best hrmt / compile")
    print(" | ".join(head))
    wins, rows = 0, 0
    for b in sorted(hs):
        base = hs[b].get("baseline", (None, None))[0]
        tier, ident = hs[b].get("tiered", (None, None))
        pin = ps.get(b, {}).get("baseline", (None, None))[0]
        grd = gs.get(b, {}).get("baseline", (None, None))[0]
        per, pident = ls.get(b, {}).get("tiered", (None, None))
        pbase = ls.get(b, {}).get("baseline", (None, None))[0]
        te = ts.get(b, {}).get("eager")
        tc = ts.get(b, {}).get("reduce-overhead")
        best = min(v for v in (base, tier, per, grd) if v is not None) if (base or tier) else None
        ratio = best / tc if best and tc else None
        if ratio is not None:
            rows += 1
            wins += ratio < 1.0
        print(" | ".join((str(b), fmt(base), fmt(grd), fmt(grd / base if grd and base else None, "%.2fx"),
                          fmt(tier), fmt(tier / base if tier and base else None, "%.2fx"),
                          {True: "yes", False: "NO"}.get(ident, "-"), fmt(per),
                          fmt(per / pbase if per and pbase else None, "%.2fx"),
                          {True: "yes", False: "NO"}.get(pident, "-"), fmt(pin), fmt(te), fmt(tc),
                          fmt(ratio, "%.2f"))))
    if rows:
        print("hrmt faster than torch.compile + CUDA graphs at %d of %d batches" % (wins, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
