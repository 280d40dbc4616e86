#!/usr/bin/env bash
# hrmt on an AMX Xeon against PyTorch eager, in one run (issue 15's table):
#
#   bash bench/amx.sh BUILD_DIR [HIGH_THREADS]
#
# BUILD_DIR: a Release build (cmake -DCMAKE_BUILD_TYPE=Release; CUDA not
# needed) with hrmt, hrmt-bench-gemm and hrmt-bench-amx-ukr. HIGH_THREADS: the many-core column
# (default 16, capped at the cores there are). Needs python3 with torch for the
# PyTorch columns (HRMT_PYTHON picks the interpreter; by default the first of
# python3 and /usr/bin/python3 that imports torch); no network.
#
# Prints:
#  1. hrmt info (the table in use: amx where the CPU and OS allow it);
#  2. the BF16 GEMM table on HRM shapes at 2 and HIGH_THREADS threads:
#     hrmt amx, hrmt avx512 (vdpbf16ps), OpenBLAS F32, torch F.linear BF16,
#     with the ratio hrmt/torch per shape and its median;
#  3. the ACT step (default model, bf16) at batch 1/8/32/64 with 2 and
#     HIGH_THREADS threads: PyTorch eager, hrmt baseline and tiered (both
#     schedules in one process, alternating rounds with PyTorch), speed-ups;
#  4. parallel efficiency from 2 to HIGH_THREADS threads per batch:
#     t(2) / (t(high) * high / 2) for PyTorch and both hrmt schedules, each t
#     the faster of two passes that alternate the thread counts;
#  5. where a batch-8 step goes at 2 and HIGH_THREADS threads (hrmt bench
#     --profile), with its parallel GEMM calls' thread times (HRMT_GEMM_TRACE=1);
#  6. the AMX micro-kernel's rate per core with 2 and with HIGH_THREADS cores
#     busy at once (hrmt-bench-amx-ukr --threads): the ceiling the per-core
#     rate of part 4's parallel efficiency meets on this machine.
# About 3.5 minutes on 16 cores (152 s with batches 1,8,64). Exit status 0 when every part ran.
# HRMT_AMX_BATCHES (default 1,8,32,64) changes the step's batch sizes;
# HRMT_AMX_MID_THREADS (e.g. 8) adds step runs at those thread counts.
set -uo pipefail
if [ $# -lt 1 ] || [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
build=$(cd "$1" && pwd) || { echo "amx.sh: no build directory $1" >&2; exit 2; }
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The first of python3 and /usr/bin/python3 that imports torch (a pyenv or
# venv python3 on PATH often lacks Debian's python3-torch), unless HRMT_PYTHON
# names one.
py=${HRMT_PYTHON:-}
if [ -z "$py" ]; then
  py=python3
  for cand in python3 /usr/bin/python3; do
    if "$cand" -c 'import torch' >/dev/null 2>&1; then py=$cand; break; fi
  done
fi
cores=$(nproc 2>/dev/null || echo 2)
high=${2:-16}
[ "$high" -gt "$cores" ] && high=$cores
for exe in hrmt hrmt-bench-gemm hrmt-bench-amx-ukr; do
  [ -x "$build/$exe" ] || { echo "amx.sh: $build/$exe missing (build it first)" >&2; exit 2; }
done
export HRMT_CALIBRATE=0 HRMT_BENCH_DIR="$root/bench" HRMT_PYTHON="$py"
t0=$(date +%s)
stamp() { echo; echo "=== [$(($(date +%s) - t0))s] $*"; }
rc=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

stamp "machine"
grep -m1 'model name' /proc/cpuinfo || true
echo "cores: $cores, threads compared: 2 and $high"
# SMT siblings share one AMX unit: with 2 threads per core, 16 CPUs are 8 tile engines.
lscpu 2>/dev/null | grep -E '^(Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|NUMA node\(s\))' || true
grep -qw amx_bf16 /proc/cpuinfo && echo "cpu flags: amx_bf16 amx_tile" || echo "cpu flags: no AMX"
"$py" -c 'import torch; print("torch", torch.__version__)' 2>/dev/null || echo "torch: not importable"
"$build/hrmt" info | head -n 3 || rc=1

# HRM shapes: M = tokens of 1, 8 and 32 samples; N x K of qkv, o_proj,
# gate_up, down. Three repetitions of >= 20 ms per method keep this short.
shapes=""
for m in 82 656 2624; do
  for nk in 1536x512 512x512 3072x512 512x1536; do shapes="$shapes --shape ${m}x${nk}"; done
done
for t in 2 "$high"; do
  stamp "BF16 GEMM, $t threads (GFLOP/s; bf16/torch = hrmt amx over torch F.linear)"
  # shellcheck disable=SC2086
  OMP_NUM_THREADS=$t "$build/hrmt-bench-gemm" --threads "$t" --reps 3 --min-ms 20 --gap-ms 20 \
    $shapes || rc=1
done

# Two passes over the thread counts, one round each, so that the 2- and the
# many-thread runs alternate: the host's speed drifts (the 16-core host's
# 2-thread step moved 1.2-1.6x between calls), and the efficiency below takes
# each side's faster pass instead of two runs minutes apart.
step_threads=$(printf '%s\n' 2 ${HRMT_AMX_MID_THREADS:-} "$high" | awk '!seen[$0]++' | tr '\n' ' ')
# shellcheck disable=SC2086
for pass in 1 2; do
  for t in $step_threads; do
    stamp "ACT step, default model, bf16, $t threads, pass $pass of 2 (ms per step; speed-up = PyTorch / hrmt)"
    OMP_NUM_THREADS=$t "$py" "$root/bench/pytorch_vs_hrmt.py" "$build" --threads "$t" \
      --batches "${HRMT_AMX_BATCHES:-1,8,32,64}" --rounds 1 --iters 2 --modes baseline,tiered \
      --json "$tmp/step$t.$pass.json" || rc=1
  done
done

stamp "parallel efficiency 2 -> $high threads: t(2) / (t($high) x $high/2), each t the faster pass"
"$py" - "$tmp/step2.1.json" "$tmp/step2.2.json" "$tmp/step$high.1.json" "$tmp/step$high.2.json" \
  "$high" <<'EOF' || rc=1
import json, sys
lo = [json.load(open(p))["rows"] for p in sys.argv[1:3]]
hi = [json.load(open(p))["rows"] for p in sys.argv[3:5]]
n = int(sys.argv[5])
keys = ("pytorch_ms", "hrmt_baseline_ms", "hrmt_tiered_ms")
print("%6s %12s %15s %13s" % ("batch", "pytorch", "hrmt baseline", "hrmt tiered"))
for i, row in enumerate(lo[0]):
    eff = [min(r[i][k] for r in lo) / (min(r[i][k] for r in hi) * n / 2.0) for k in keys]
    print("%6d %11.0f%% %14.0f%% %12.0f%%" % (row["batch"], *(100 * e for e in eff)))
EOF
# Where the step's time goes and how its parallel GEMM calls spend theirs
# (HRMT_GEMM_TRACE=1: per thread waking, packing A, inside units, idle at the
# end), at the batch whose scaling is the question.
for t in 2 "$high"; do
  stamp "where a batch-8 step goes, $t threads (hrmt bench --profile, HRMT_GEMM_TRACE=1)"
  HRMT_GEMM_TRACE=1 "$build/hrmt" bench --threads "$t" --batch-sizes 8 --iterations 3 --warmup 1 \
    --mode baseline --profile --quiet | tail -n 9 || rc=1
done
# The TMUL's rate per core when the other cores use theirs too: a GEMM's
# per-core rate on many threads cannot beat it, whatever the partitioning.
for t in 2 "$high"; do
  "$build/hrmt-bench-amx-ukr" --threads "$t" --rounds 5 --ms 50 >"$tmp/ukr$t.txt"
  code=$?
  [ $code -eq 0 ] || [ $code -eq 77 ] || rc=1
done
stamp "AMX micro-kernel per core, 2 and $high cores busy (hrmt-bench-amx-ukr --threads; GFLOP/s per thread, best round)"
"$py" - "$tmp/ukr2.txt" "$tmp/ukr$high.txt" "$high" <<'EOF' || rc=1
import sys
def rates(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) == 4 and f[0] in ("partial", "deferred", "a_from_l2", "w_from_l2"):
            out[f[0]] = float(f[3])
    return out
lo, hi = rates(sys.argv[1]), rates(sys.argv[2])
if not lo or not hi:
    print("no AMX kernel here (hrmt-bench-amx-ukr exit 77)")
    sys.exit(0)
print("%-10s %12s %12s %9s" % ("variant", "2 cores", sys.argv[3] + " cores", "ratio"))
for k in lo:
    print("%-10s %12.0f %12.0f %8.0f%%" % (k, lo[k], hi[k], 100 * hi[k] / lo[k]))
EOF
stamp "done (exit $rc)"
exit $rc
