#!/usr/bin/env bash
# Where one ACT step's GPU time goes: runs one step of `hrmt bench` under
# Nsight Compute (ncu --clock-control none: the clocks are left alone) with
# the kernel duration and the bytes each kernel moved through L2 and DRAM,
# and prints the kernels grouped by name, costliest first (calls, total and
# mean microseconds, share of the step, achieved L2 and DRAM GB/s: whether
# a kernel is bound by the L2's bandwidth, e.g. the small batches' repeated
# reads of A and W tiles by every CTA, docs/CUDA-KERNELS.md; and how busy
# the tensor pipe was over the kernel's elapsed cycles, in % of its peak,
# time-weighted over the calls: how near a GEMM is the tensor ceiling).
#   bash bench/gpu_profile.sh BUILD_DIR [BATCH] [MODE] [DTYPE]
# BATCH defaults to 256, MODE (baseline|tiered) to baseline, DTYPE to bf16.
# Needs ncu and python3 (both on the GPU machine). Exit 0 when ncu ran.
# Only the step is profiled (HRMT_CUDA_PROFILE_STEPS=1 puts each step in a
# profiler range; ncu --profile-from-start off), so the GEMM tuner's
# thousands of timing launches at load run unprofiled. They still run under
# ncu, whose presence changes their times and so, at times, the picks
# (H200, session 26: batch 64's gate_up took 64 x 32 tiles, 60 us a call,
# under ncu and 128 x 64, 42 us, without it), so the script prints a plain
# run's picks beside those made under ncu (HRMT_CUDA_GEMM_TUNE_LOG=1's lines
# for the step's rows: the cuBLASLt algorithm's id, tile, stages, cluster).
# Since session 60 the plain run writes its picks to a pick file
# (HRMT_CUDA_GEMM_TUNE_CACHE) and the run under ncu takes them from it, each
# checked for bits, so the profile shows the plain run's GEMM kernels;
# PROFILE_OWN_PICKS=1 lets the run under ncu tune for itself as before.
# Forcing an own shape (HRMT_CUDA_GLU_SHAPE, HRMT_CUDA_WGEMM_SHAPE) turns the
# tuner off, the cuBLASLt GEMMs then on their pinned algorithms. ncu also
# empties the caches before each kernel, so memory-bound kernels read cold.
set -uo pipefail
if [ $# -lt 1 ] || [ "$1" = --help ]; then
  sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -ge 1 ] && exit 0
  exit 2
fi
build=$1 batch=${2:-256} mode=${3:-baseline} dtype=${4:-bf16}
csv=$(mktemp) plain=$(mktemp) under=$(mktemp) picks=$(mktemp)
# HMMA and HGMMA (wgmma) both count here on sm_90.
TENSOR=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed
trap 'rm -f "$csv" "$plain" "$under" "$picks"' EXIT
# An empty file is a pick file with no picks: the plain run fills it.
share=(HRMT_CUDA_GEMM_TUNE_CACHE="$picks")
[ "${PROFILE_OWN_PICKS:-0}" = 1 ] && share=()
# The tuner's picks of a plain run, to set beside those made under ncu.
env "${share[@]}" HRMT_CUDA_GEMM_TUNE_LOG=1 "$build/hrmt" bench --backend cuda --mode "$mode" \
  --batch-sizes "$batch" --dtype "$dtype" --warmup 0 --iterations 1 --quiet \
  >/dev/null 2>"$plain" || echo "the plain run failed; its picks are missing below"
env "${share[@]}" HRMT_CUDA_GEMM_TUNE_LOG=1 HRMT_CUDA_PROFILE_STEPS=1 ncu --clock-control none \
  --profile-from-start off \
  --metrics gpu__time_duration.sum,lts__t_bytes.sum,dram__bytes.sum,$TENSOR --csv \
  "$build/hrmt" bench --backend cuda --mode "$mode" --batch-sizes "$batch" --dtype "$dtype" \
  --warmup 0 --iterations 1 --quiet >"$csv" 2>"$under"
rc=$?
[ $rc -eq 0 ] || { echo "ncu failed (rc $rc)"; tail -n 5 "$csv" "$under"; exit $rc; }
python3 - "$csv" "$batch" "$mode" "$dtype" "$TENSOR" "$plain" "$under" <<'PY'
import csv, sys, collections, re
path, batch, mode, dtype, tensor, plain, under = sys.argv[1:8]
TIME_UNIT = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
BYTE_UNIT = {"byte": 1.0, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}
def short(name):  # without the parameter list, the anonymous namespace kept
    return name.replace("(anonymous namespace)", "<unnamed>").split("(")[0][:60]
# ncu's kernel ID -> [name, us, l2 bytes, dram bytes, grid, block, tensor %]
kern = collections.OrderedDict()
with open(path, newline="") as f:
    lines = [l for l in f if l.startswith('"')]
for r in csv.DictReader(lines):
    metric = r.get("Metric Name")
    if metric not in ("gpu__time_duration.sum", "lts__t_bytes.sum", "dram__bytes.sum", tensor):
        continue
    v = float(r["Metric Value"].replace(",", ""))
    unit = r.get("Metric Unit", "")
    k = kern.setdefault(r.get("ID", str(len(kern))),
                        [short(r["Kernel Name"]), 0.0, 0.0, 0.0,
                         r.get("Grid Size", ""), r.get("Block Size", ""), None])
    if metric == "gpu__time_duration.sum":
        k[1] = v * TIME_UNIT.get(unit, 1e-3)
    elif metric == tensor:
        k[6] = v
    else:
        k[2 if metric.startswith("lts") else 3] = v * BYTE_UNIT.get(unit, 1.0)
# Per name: calls, us, L2 and DRAM bytes, grid, block, tensor % x us summed
# and the us it covers (a call without the metric does not count).
agg = collections.OrderedDict()
for name, us, l2, dram, g, b, pct in kern.values():
    a = agg.setdefault(name, [0, 0.0, 0.0, 0.0, g, b, 0.0, 0.0])
    a[0] += 1
    a[1] += us
    a[2] += l2
    a[3] += dram
    if pct is not None:
        a[6] += pct * us
        a[7] += us
total = sum(a[1] for a in agg.values())
print(f"one ACT step, batch {batch}, {mode}, {dtype}: {len(kern)} kernels, "
      f"{total:.0f} us of kernel time")
print(f"{'kernel':60s} {'calls':>5s} {'total us':>9s} {'mean us':>8s} {'share':>6s} "
      f"{'L2 GB/s':>8s} {'DRAM GB/s':>9s} {'tensor':>6s}  grid / block")
top = []
for name, (n, us, l2, dram, g, b, pus, cus) in sorted(agg.items(), key=lambda kv: -kv[1][1]):
    bw = lambda x: x / (us * 1e3) if us > 0 else 0.0  # bytes per us / 1e3 = GB/s
    pipe = f"{pus / cus:5.1f}%" if cus > 0 else f"{'-':>6s}"
    print(f"{name:60s} {n:5d} {us:9.1f} {us / n:8.2f} {100 * us / total:5.1f}% "
          f"{bw(l2):8.0f} {bw(dram):9.0f} {pipe}  {g} / {b}")
    # The bare name: no return type, anonymous namespace or template arguments.
    bare = re.split(r"[<( ]", name.removeprefix("void ").replace("<unnamed>::", ""))[0]
    top.append(f"{bare[:22]} {100 * us / total:.1f}% (tensor {pipe.strip()})")
# The tuner's picks for the step's rows (the exact-M lines, "rows = M"),
# plain and under ncu: ncu's presence changes the timings the picks rest on.
def picks(p):
    out = collections.OrderedDict()
    for l in open(p, errors="replace"):
        # Pick lines only ("WINNER (times...)"), not each candidate's time.
        m = re.match(r"hrmt gemm tuning: (.*), rows = (\d+): (\S[^(]*\(.*\))$", l.strip())
        if m:
            out[(m.group(1), m.group(2))] = m.group(3)
    return out
a, b = picks(plain), picks(under)
shared = [l.strip() for l in open(under, errors="replace") if "read and checked" in l]
if a and shared:
    print("GEMM picks at the step's rows, plain run, which the run under ncu took from the "
          "plain run's pick file (" + "; ".join(re.sub(r".*: ", "", l) for l in shared) + "):")
    for k, v in a.items():
        print(f"  {k[0]}, rows {k[1]}: {v}")
elif a or b:
    print("GEMM picks at the step's rows, plain run / under ncu (HRMT_CUDA_GEMM_TUNE_LOG=1):")
    for k in list(a) + [k for k in b if k not in a]:
        pa, pb = a.get(k, "-"), b.get(k, "-")
        same = re.sub(r"\([^:]*:?", "(", pa) == re.sub(r"\([^:]*:?", "(", pb)
        print(f"  {k[0]}, rows {k[1]}: {'same' if same else 'DIFFERENT'}")
        print(f"    plain: {pa}")
        print(f"    ncu:   {pb}")
else:
    print("GEMM picks: no exact-M tuning at these rows (the buckets' picks serve)")
# One line for bench/gpu.sh's summary: the three costliest kernels.
print("costliest: " + "; ".join(top[:3]))
PY
