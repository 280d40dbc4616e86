#!/usr/bin/env python3
"""Checks bench/link_trace.py's reading of a link trace on records written
here by hand, with the expected kernels, spans and points worked out by hand
(not by the script): the cut into kernels (a new shape; the same shape whose
(CTA, thread) waits again; records out of slot order), spans, per-shape and
per-position grouping, the points, and the per-warpgroup steps (--steps).
Exit 0 when all hold."""
import contextlib
import importlib.util
import io
import os
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "link_trace", os.path.join(here, "..", "bench", "link_trace.py"))
lt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lt)

fails = 0


def check(what, got, want):
    global fails
    if got != want:
        print(f"FAIL {what}: got {got!r}, want {want!r}")
        fails += 1


HEAD = "slot,t_call,t_pass,grid,block,smem,cta,thread," + ",".join(
    f"ph{p}" for p in range(1, 9))


def rec(slot, call, passed, grid, block, smem, cta, thread, points=None):
    ph = [0] * 8
    for p, t in (points or {}).items():
        ph[p - 1] = t
    return ",".join(map(str, [slot, call, passed, grid, block, smem, cta, thread] + ph))


# Four kernels: A (2 CTAs x 2 waiting warpgroups), A again (same shape: its
# CTA 0 thread 0 waits again, so a new kernel), B (one CTA), A (3rd).
lines = [
    rec(0, 900, 1000, 2, 256, 4096, 0, 0),
    rec(1, 950, 1010, 2, 256, 4096, 0, 128, {2: 1500, 8: 2000}),
    rec(2, 960, 1020, 2, 256, 4096, 1, 0),
    rec(3, 970, 1030, 2, 256, 4096, 1, 128, {2: 1700, 8: 2600}),
    rec(4, 2500, 3000, 2, 256, 4096, 0, 0),
    rec(6, 2600, 3100, 2, 256, 4096, 1, 0),
    rec(5, 2550, 3050, 2, 256, 4096, 0, 128, {8: 3900}),
    rec(7, 4100, 4200, 1, 128, 0, 0, 0, {1: 4300}),
    rec(8, 4500, 5000, 2, 256, 4096, 0, 0),
]
with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    f.write("# batch 1, 9 records (units 1)\n" + HEAD + "\n" + "\n".join(lines) + "\n")
    path = f.name
try:
    head, rows = lt.read_trace(path)
    check("header", head, "batch 1, 9 records (units 1)")
    check("slot order", [r["slot"] for r in rows], list(range(9)))
    tl = lt.timeline(lt.kernels(rows))
    check("kernels", [k["sig"] for k in tl],
          [(2, 256, 4096), (2, 256, 4096), (1, 128, 0), (2, 256, 4096)])
    check("waiters", [k["waiters"] for k in tl], [4, 3, 1, 1])
    check("first returns", [k["first"] for k in tl], [1000, 3000, 4200, 5000])
    check("last returns", [k["last"] for k in tl], [1030, 3100, 4200, 5000])
    check("first calls", [k["called"] for k in tl], [900, 2500, 4100, 4500])
    check("spans", [k["span"] for k in tl], [2000, 1200, 800, None])
    check("points, kernel 0", tl[0]["points"], {2: (500, 700), 8: (1000, 1600)})
    check("points, kernel 1", tl[1]["points"], {8: (900, 900)})
    check("points, kernel 2", tl[2]["points"], {1: (100, 100)})
    by_shape = lt.groups(tl)
    check("spans by shape", {k: g["spans"] for k, g in by_shape.items()},
          {(2, 256, 4096): [2000, 1200], (1, 128, 0): [800]})
    check("points by shape", by_shape[(2, 256, 4096)]["points"],
          {2: [(500, 700)], 8: [(1000, 1600), (900, 900)]})
    by_pos = lt.groups(tl, 2)
    check("spans by position", {k: g["spans"] for k, g in by_pos.items()},
          {0: [2000, 800], 1: [1200]})
    # Steps per warpgroup, order 1, 2, 8: kernel 0's two records that
    # passed points (2 then 8; none passed 1), kernel 1's one (8 only);
    # kernel 3 is the last, left out as in groups.
    ks = lt.kernels(rows)
    st = lt.steps(ks, [1, 2, 8])
    check("steps by shape", {k: g["steps"] for k, g in st.items()},
          {(2, 256, 4096): {("pass", 2): [490, 670], (2, 8): [500, 900],
                            ("pass", 8): [850]},
           (1, 128, 0): {("pass", 1): [100]}})
    check("steps by position", {k: g["steps"] for k, g in lt.steps(ks, [1, 2, 8], 2).items()},
          {0: {("pass", 2): [490, 670], (2, 8): [500, 900], ("pass", 1): [100]},
           1: {("pass", 8): [850]}})
    check("quantiles", [lt.pct([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], q) for q in (0.1, 0.5, 0.9)],
          [2, 6, 10])
    check("main", lt.main([path, "--period", "2"]), 0)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check("main with steps", lt.main([path, "--steps", "1,2,8"]), 0)
    check("steps printed", [ln.strip() for ln in out.getvalue().splitlines() if "->" in ln],
          ["pass->1: 0.10 (0.10-0.10), 1", "pass->2: 0.67 (0.49-0.67), 2",
           "2->8: 0.90 (0.50-0.90), 2", "pass->8: 0.85 (0.85-0.85), 1"])
finally:
    os.unlink(path)
print("link_trace_check:", "FAIL" if fails else "ok")
# A step past the device buffer: the header says so and stays the header
# (the "# dropped" line after it is a warning, not the header).
with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
    f.write("# batch 256, 1 records (units 1), DROPPED past the buffer\n"
            "# dropped 5 of 6 records\n" + HEAD + "\n" + lines[0] + "\n")
    path = f.name
try:
    head, rows = lt.read_trace(path)
    check("header of a cut-off step", head, "batch 256, 1 records (units 1), DROPPED past the buffer")
    check("records of a cut-off step", len(rows), 1)
finally:
    os.unlink(path)

sys.exit(1 if fails else 0)
