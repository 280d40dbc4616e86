#!/usr/bin/env python3
"""The step's timeline from a link trace (a build with -DHRMT_CUDA_LINK_TRACE=ON,
src/cuda/link_trace.cuh), kernel by kernel, as the step ran: one line per
kernel with its grid, block and dynamic shared memory, when its first
waiting thread called pdl_wait() and when the first / last wait returned
(the kernel before had finished), relative to the first kernel's first
return, and its span: from its first return to the next kernel's (its work
plus the link to the next one). Then the spans summed per kernel shape.

  HRMT_CUDA_LINK_TRACE_OUT=/tmp/t.csv BUILD/hrmt bench --backend cuda \\
      --mode baseline --batch-sizes 1 --warmup 3 --iterations 5
  python3 bench/link_trace.py /tmp/t.csv [--all]

Kernels that never call pdl_wait() (cuBLASLt's) do not appear: their time
is in the span of the kernel before them."""
import sys


def kernels(rows):
    out, cur, seen = [], None, set()
    for r in rows:
        sig = (r["grid"], r["block"], r["smem"])
        key = (r["cta"], r["thread"])
        if cur is None or sig != cur["sig"] or key in seen:
            cur = {"sig": sig, "calls": [], "passes": [], "phases": {}}
            out.append(cur)
            seen = set()
        seen.add(key)
        cur["calls"].append(r["t_call"])
        cur["passes"].append(r["t_pass"])
        for pid in range(1, 9):  # the points inside the kernel (LT_PHASE) this waiter passed
            t = r.get(f"ph{pid}", 0)
            if t:
                cur["phases"].setdefault(pid, []).append(t)
    return out


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    head, rows = "", []
    with open(argv[0]) as f:
        for line in f:
            if line.startswith("#"):
                head = line[1:].strip()
                continue
            if line.startswith("slot"):
                names = line.strip().split(",")
                continue
            rows.append(dict(zip(names, map(int, line.strip().split(",")))))
    rows.sort(key=lambda r: r["slot"])
    ks = kernels(rows)
    if not ks:
        print("no records")
        return 1
    t0 = min(ks[0]["passes"])
    print(f"link trace: {head}; {len(ks)} kernels that wait")
    spans, phases = {}, {}
    lines = []
    for i, k in enumerate(ks):
        first, last = min(k["passes"]), max(k["passes"])
        span = min(ks[i + 1]["passes"]) - first if i + 1 < len(ks) else None
        early = first - min(k["calls"])
        g, b, s = k["sig"]
        if span is not None:
            spans.setdefault(k["sig"], []).append(span)
            ph = phases.setdefault(k["sig"], {})
            for pid, ts in k["phases"].items():
                ph.setdefault(pid, []).append((min(ts) - first, max(ts) - first))
        lines.append(
            f"{i:4d} grid {g:5d} x {b:4d}  smem {s / 1024:6.1f} KB  waiters {len(k['passes']):4d}  "
            f"called {(min(k['calls']) - t0) / 1e3:9.2f}  passed {(first - t0) / 1e3:9.2f} .. "
            f"{(last - t0) / 1e3:9.2f} us  (waited {early / 1e3:6.2f})  span "
            + (f"{span / 1e3:7.2f} us" if span is not None else "   (last)")
        )
    show = lines if "--all" in argv else lines[:40]
    print("\n".join(show))
    if len(show) < len(lines):
        print(f"... {len(lines) - len(show)} more (--all)")
    total = min(ks[-1]["passes"]) - t0
    print(f"\nfirst wait return to the last kernel's: {total / 1e3:.1f} us")
    print("spans per kernel shape (grid x block, shared memory): count, mean, min, max us, share")
    for sig, v in sorted(spans.items(), key=lambda kv: -sum(kv[1])):
        g, b, s = sig
        print(
            f"  {g:5d} x {b:4d} {s / 1024:6.1f} KB: {len(v):4d}  {sum(v) / len(v) / 1e3:7.2f}  "
            f"{min(v) / 1e3:7.2f}  {max(v) / 1e3:7.2f}  {100 * sum(v) / total:5.1f}%"
        )
    if any(phases.values()):
        print("points inside the kernels (LT_PHASE; 1 first operands landed, 2 products done, "
              "3-5 epilogue steps, 8 end), us after the kernel's first wait return, "
              "mean over its calls of the first / last warpgroup to pass it:")
        for sig, ph in sorted(phases.items(), key=lambda kv: -sum(spans[kv[0]])):
            if not ph:
                continue
            g, b, s = sig
            cells = "  ".join(
                f"{pid}: {sum(a for a, _ in v) / len(v) / 1e3:.2f} / {sum(z for _, z in v) / len(v) / 1e3:.2f}"
                for pid, v in sorted(ph.items())
            )
            print(f"  {g:5d} x {b:4d} {s / 1024:6.1f} KB (span {sum(spans[sig]) / len(spans[sig]) / 1e3:.2f}): {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
