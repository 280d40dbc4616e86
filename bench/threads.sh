#!/usr/bin/env bash
# Where an ACT step's time goes at several thread counts (issue 15's "find
# where the time goes"), in one run on one machine:
#
#   bash bench/threads.sh BUILD_DIR [THREADS...]      (default: 2 8 and all cores)
#
# BUILD_DIR: a Release build with hrmt and hrmt-bench-gemm. For each thread
# count: `hrmt bench --profile` (both schedules, bf16, default model, batch
# 1/8/64; HRMT_THREADS_BATCHES changes them) and the BF16 GEMM alone on HRM
# shapes (hrmt-bench-gemm --no-torch); what one OpenMP region costs
# (hrmt-bench-omp, when built). Then the largest count again under
# OMP_WAIT_POLICY=active and under OMP_PROC_BIND=close/OMP_PLACES=cores, to
# tell thread wake-ups and migration from the work itself.
set -uo pipefail
if [ $# -lt 1 ] || [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
build=$(cd "$1" && pwd) || { echo "threads.sh: no build directory $1" >&2; exit 2; }
shift
cores=$(nproc 2>/dev/null || echo 2)
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(2 8 "$cores")
batches=${HRMT_THREADS_BATCHES:-1,8,64}
for exe in hrmt hrmt-bench-gemm; do
  [ -x "$build/$exe" ] || { echo "threads.sh: $build/$exe missing (build it first)" >&2; exit 2; }
done
export HRMT_CALIBRATE=0
rc=0
grep -m1 'model name' /proc/cpuinfo 2>/dev/null
echo "cores: $cores; thread counts: ${counts[*]}; batches: $batches"
step() { # label, then env assignments and the thread count
  local label=$1 t=$2
  shift 2
  echo
  echo "=== step, $t threads$label"
  env "$@" "$build/hrmt" bench --threads "$t" --batch-sizes "$batches" --iterations 3 \
    --warmup 1 --quiet --profile | sed -n '/^Latency/,$p' || rc=1
}
for t in "${counts[@]}"; do step "" "$t"; done
for t in "${counts[@]}"; do
  echo
  echo "=== BF16 GEMM alone, $t threads"
  "$build/hrmt-bench-gemm" --no-torch --threads "$t" --reps 3 || rc=1
done
hi=${counts[${#counts[@]}-1]}
# What a parallel region itself costs at 1..hi threads, with libgomp's default
# spinning and with sleeping waiters (hrmt-bench-omp: back to back, after idle).
if [ -x "$build/hrmt-bench-omp" ]; then
  for policy in "" passive; do
    echo
    echo "=== one OpenMP region, 1..$hi threads${policy:+, OMP_WAIT_POLICY=$policy}"
    env ${policy:+OMP_WAIT_POLICY=$policy} "$build/hrmt-bench-omp" --threads "$hi" || rc=1
  done
fi
step ", OMP_WAIT_POLICY=active" "$hi" OMP_WAIT_POLICY=active
step ", OMP_PROC_BIND=close OMP_PLACES=cores" "$hi" OMP_PROC_BIND=close OMP_PLACES=cores
exit $rc
