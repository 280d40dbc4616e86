#!/usr/bin/env bash
# Where one ACT step's GPU time goes: runs one step of `hrmt bench` under
# Nsight Compute (ncu --clock-control none: the clocks are left alone) with
# only the kernel-duration metric, and prints the kernels grouped by name,
# costliest first (calls, total and mean microseconds, share of the step).
#   bash bench/gpu_profile.sh BUILD_DIR [BATCH] [MODE] [DTYPE]
# BATCH defaults to 256, MODE (baseline|tiered) to baseline, DTYPE to bf16.
# Needs ncu and python3 (both on the GPU machine). Exit 0 when ncu ran.
# Only the step is profiled (HRMT_CUDA_PROFILE_STEPS=1 puts each step in a
# profiler range; ncu --profile-from-start off), so the GEMM tuner's
# thousands of timing launches at load run unprofiled. They still run under
# ncu, whose presence changes their times and so, at times, the picks
# (H200, session 26: batch 64's gate_up took 64 x 32 tiles, 60 us a call,
# under ncu and 128 x 64, 42 us, without it). Compare the kernel names with
# HRMT_CUDA_GEMM_TUNE_LOG=1's picks in a plain run; forcing an own shape
# (HRMT_CUDA_GLU_SHAPE, HRMT_CUDA_WGEMM_SHAPE) turns the tuner off, the
# cuBLASLt GEMMs then on their pinned algorithms. ncu also empties the
# caches before each kernel, so memory-bound kernels read cold.
set -uo pipefail
if [ $# -lt 1 ] || [ "$1" = --help ]; then
  sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -ge 1 ] && exit 0
  exit 2
fi
build=$1 batch=${2:-256} mode=${3:-baseline} dtype=${4:-bf16}
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
HRMT_CUDA_PROFILE_STEPS=1 ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum --csv \
  "$build/hrmt" bench --backend cuda --mode "$mode" --batch-sizes "$batch" --dtype "$dtype" \
  --warmup 0 --iterations 1 --quiet >"$csv" 2>/dev/null
rc=$?
[ $rc -eq 0 ] || { echo "ncu failed (rc $rc)"; tail -n 5 "$csv"; exit $rc; }
python3 - "$csv" "$batch" "$mode" "$dtype" <<'PY'
import csv, sys, collections
path, batch, mode, dtype = sys.argv[1:5]
rows = []
with open(path, newline="") as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    if r.get("Metric Name") != "gpu__time_duration.sum":
        continue
    v = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "ns")
    us = v / 1e3 if unit == "nsecond" or unit == "ns" else v if unit in ("usecond", "us") else v * 1e3
    name = r["Kernel Name"].split("(")[0][:60]
    rows.append((name, us, r.get("Grid Size", ""), r.get("Block Size", "")))
agg = collections.OrderedDict()
for name, us, g, b in rows:
    a = agg.setdefault(name, [0, 0.0, g, b])
    a[0] += 1
    a[1] += us
total = sum(a[1] for a in agg.values())
print(f"one ACT step, batch {batch}, {mode}, {dtype}: {len(rows)} kernels, "
      f"{total:.0f} us of kernel time")
print(f"{'kernel':60s} {'calls':>5s} {'total us':>9s} {'mean us':>8s} {'share':>6s}  grid / block")
for name, (n, us, g, b) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    print(f"{name:60s} {n:5d} {us:9.1f} {us / n:8.2f} {100 * us / total:5.1f}%  {g} / {b}")
PY
