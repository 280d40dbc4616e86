#!/usr/bin/env python3
"""The step's timeline from a link trace (a build with -DHRMT_CUDA_LINK_TRACE=ON,
src/cuda/link_trace.cuh), kernel by kernel, as the step ran: one line per
kernel with its grid, block and dynamic shared memory, when its first
waiting thread called pdl_wait() and when the first / last wait returned
(the kernel before had finished), relative to the first kernel's first
return, and its span: from its first return to the next kernel's (its work
plus the link to the next one). Then the spans and the points inside the
kernels (LT_PHASE) summed per kernel shape, or with --period N per position
in a repeating run of N kernels (4 at batch 1: a block's qkv + attention,
o_proj + norm, gate_up, down_proj + norm, which share shapes).

  HRMT_CUDA_LINK_TRACE_OUT=/tmp/t.csv BUILD/hrmt bench --backend cuda \\
      --mode baseline --batch-sizes 1 --warmup 3 --iterations 5
  python3 bench/link_trace.py /tmp/t.csv [--all] [--period N] [--steps 1,2,6,3,5,7,4,8]

--steps ORDER adds, per kernel shape (or position), each warpgroup's own
time from its wait's return to the first point of ORDER it passed and from
each point it passed to the next one of ORDER it passed (median and 10th /
90th percentiles over the records that passed both, us): where the first /
last columns mix CTAs that run different rows (one with no rows passes a
kernel's late points early), these follow each warpgroup (session 55 found
the cluster norm's owner epilogue this way).

Kernels that never call pdl_wait() (cuBLASLt's) do not appear: their time
is in the span of the kernel before them. tests/link_trace_check.py checks
the grouping and the arithmetic."""
import sys

POINTS = 8  # LT_PHASES in src/cuda/link_trace.cuh


def read_trace(path):
    """(header, records sorted by slot) of a trace file."""
    head, rows, names = "", [], None
    with open(path) as f:
        for line in f:
            if line.startswith("# dropped"):
                print(f"warning: {line[1:].strip()}: the step is cut off", file=sys.stderr)
            elif line.startswith("#"):
                head = line[1:].strip()
            elif line.startswith("slot"):
                names = line.strip().split(",")
            elif line.strip():
                rows.append(dict(zip(names, map(int, line.strip().split(",")))))
    rows.sort(key=lambda r: r["slot"])
    return head, rows


def kernels(rows):
    """Records in slot order, cut into kernels: a kernel's waits all return
    before the next kernel's, so a new kernel starts where the shape changes
    or a (CTA, thread) already seen waits again."""
    out, cur, seen = [], None, set()
    for r in rows:
        sig = (r["grid"], r["block"], r["smem"])
        key = (r["cta"], r["thread"])
        if cur is None or sig != cur["sig"] or key in seen:
            cur = {"sig": sig, "calls": [], "passes": [], "points": {}, "recs": []}
            out.append(cur)
            seen = set()
        seen.add(key)
        cur["recs"].append(r)
        cur["calls"].append(r["t_call"])
        cur["passes"].append(r["t_pass"])
        for pid in range(1, POINTS + 1):
            t = r.get(f"ph{pid}", 0)
            if t:
                cur["points"].setdefault(pid, []).append(t)
    return out


def timeline(ks):
    """Per kernel (ns): its first and last wait return, its first call, its
    span to the next kernel's first return (None for the last), and each
    point's first / last time after its first return."""
    out = []
    for i, k in enumerate(ks):
        first = min(k["passes"])
        out.append({
            "sig": k["sig"],
            "waiters": len(k["passes"]),
            "called": min(k["calls"]),
            "called_last": max(k["calls"]),
            "first": first,
            "last": max(k["passes"]),
            "span": min(ks[i + 1]["passes"]) - first if i + 1 < len(ks) else None,
            "points": {p: (min(v) - first, max(v) - first) for p, v in k["points"].items()},
        })
    return out


def groups(tl, period=0):
    """Kernels with a span, grouped by shape (or by index % period): per
    group its spans and, per point, the list of (first, last) times."""
    out = {}
    for i, k in enumerate(tl):
        if k["span"] is None:
            continue
        key = i % period if period else k["sig"]
        g = out.setdefault(key, {"sig": k["sig"], "spans": [], "late": [], "points": {}})
        g["spans"].append(k["span"])
        g["late"].append(k["called_last"] - k["first"])
        for p, v in k["points"].items():
            g["points"].setdefault(p, []).append(v)
    return out


def mean(v):
    return sum(v) / len(v)


def pct(v, q):
    """The q-quantile of v (sorted): its element at 0-based rank floor(q n)."""
    return v[min(len(v) - 1, int(q * len(v)))]


def steps(ks, order, period=0):
    """Per kernel shape (or position; the last kernel left out, as in
    groups): for each warpgroup record, the step from its wait's return
    ("pass") to the first point of `order` it passed, and from each point
    it passed to the next of `order` it passed; {key: {"sig": ..., "steps":
    {(a, b): [ns, ...]}}}, the steps in order of first appearance."""
    out = {}
    for i, k in enumerate(ks[:-1]):
        key = i % period if period else k["sig"]
        g = out.setdefault(key, {"sig": k["sig"], "steps": {}})
        for r in k["recs"]:
            prev, t0 = "pass", r["t_pass"]
            for p in order:
                t = r.get(f"ph{p}", 0)
                if not t:
                    continue
                g["steps"].setdefault((prev, p), []).append(t - t0)
                prev, t0 = p, t
    return out


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    period = 0
    if "--period" in argv:
        period = int(argv[argv.index("--period") + 1])
    step_order = []
    if "--steps" in argv:
        step_order = [int(x) for x in argv[argv.index("--steps") + 1].split(",")]
    head, rows = read_trace(argv[0])
    ks = kernels(rows)
    tl = timeline(ks)
    if not tl:
        print("no records")
        return 1
    t0 = tl[0]["first"]
    print(f"link trace: {head}; {len(tl)} kernels that wait")
    lines = []
    for i, k in enumerate(tl):
        g, b, s = k["sig"]
        lines.append(
            f"{i:4d} grid {g:5d} x {b:4d}  smem {s / 1024:6.1f} KB  waiters {k['waiters']:4d}  "
            f"called {(k['called'] - t0) / 1e3:9.2f} .. {(k['called_last'] - t0) / 1e3:9.2f}  passed {(k['first'] - t0) / 1e3:9.2f} .. "
            f"{(k['last'] - t0) / 1e3:9.2f} us  (waited {(k['first'] - k['called']) / 1e3:6.2f})  "
            "span " + (f"{k['span'] / 1e3:7.2f} us" if k["span"] is not None else "   (last)")
        )
    show = lines if "--all" in argv else lines[:40]
    print("\n".join(show))
    if len(show) < len(lines):
        print(f"... {len(lines) - len(show)} more (--all)")
    total = tl[-1]["first"] - t0
    print(f"\nfirst wait return to the last kernel's: {total / 1e3:.1f} us")
    by = f"position in runs of {period}" if period else "kernel shape"
    print(f"spans per {by} (grid x block, shared memory): count, mean, min, max us, share; "
          "late: the last waiter's call after the first return (a CTA that was not resident "
          "early), mean us")
    gs = groups(tl, period)
    order = sorted(gs.items(), key=lambda kv: kv[0] if period else -sum(kv[1]["spans"]))
    for key, grp in order:
        g, b, s = grp["sig"]
        v = grp["spans"]
        tag = f"#{key} " if period else ""
        print(
            f"  {tag}{g:5d} x {b:4d} {s / 1024:6.1f} KB: {len(v):4d}  {mean(v) / 1e3:7.2f}  "
            f"{min(v) / 1e3:7.2f}  {max(v) / 1e3:7.2f}  {100 * sum(v) / total:5.1f}%  "
            f"late {mean(grp['late']) / 1e3:6.2f}"
        )
    if any(grp["points"] for grp in gs.values()):
        print("points inside the kernels (LT_PHASE; 1 first operands landed, 2 products done, "
              "3-7 epilogue steps, 8 end), us after the kernel's first wait return, "
              "mean over its calls of the first / last warpgroup to pass it:")
        for key, grp in order:
            if not grp["points"]:
                continue
            g, b, s = grp["sig"]
            cells = "  ".join(
                f"{p}: {mean([a for a, _ in v]) / 1e3:.2f} / {mean([z for _, z in v]) / 1e3:.2f}"
                for p, v in sorted(grp["points"].items())
            )
            tag = f"#{key} " if period else ""
            print(f"  {tag}{g:5d} x {b:4d} {s / 1024:6.1f} KB "
                  f"(span {mean(grp['spans']) / 1e3:.2f}): {cells}")
    if step_order:
        print("steps of each warpgroup (--steps), us: median (10th-90th percentile), records")
        st = steps(ks, step_order, period)
        for key, grp in sorted(st.items(), key=lambda kv: kv[0] if period else str(kv[0])):
            if not any(len(v) for v in grp["steps"].values()):
                continue
            g, b, s = grp["sig"]
            tag = f"#{key} " if period else ""
            print(f"  {tag}{g:5d} x {b:4d} {s / 1024:6.1f} KB:")
            for (a, z), v in grp["steps"].items():
                v = sorted(v)
                print(f"    {a}->{z}: {pct(v, 0.5) / 1e3:.2f} ({pct(v, 0.1) / 1e3:.2f}-"
                      f"{pct(v, 0.9) / 1e3:.2f}), {len(v)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
