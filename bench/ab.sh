#!/usr/bin/env bash
# A/B of one environment switch on the ACT step: `hrmt bench` run once per
# value per round, the values alternating within each round (machines are
# shared and noisy: side by side in one run; even rounds run the values in
# reverse order, so that a drift over the run, or a value's place after
# another, does not favour one value), then one table of the median
# ms per step, a column per value, a line per (batch, round), the ratio
# of each value's median over the rounds to the first value's, and in how
# many rounds each value beat the first.
#   bash bench/ab.sh BUILD_DIR VAR "V1 V2 ..." [BATCHES] [ROUNDS] [-- extra hrmt bench args]
# BATCHES defaults to 1,8,64,256 and ROUNDS to 2; the extra arguments default
# to `--backend cuda --mode baseline --warmup 300 --iterations 20` (the GPU's
# first few hundred steps after a load run up to ~5% slower at small batches:
# H100, session 46, docs/BENCHMARKS.md). A value "-" leaves VAR
# unset. VAR = BUILD: the values are build directories, each run by its own
# hrmt with no variable set (BUILD_DIR unused: write -), for changes that no
# switch selects. VAR = ENV: each value is a comma-separated list of
# assignments set together ("-": none), for several switches at once.
# Examples (docs/CUDA-KERNELS.md):
#   bash bench/ab.sh build HRMT_CUDA_CLUSTER_NORM "0 1" 1,2,4 3
#   bash bench/ab.sh - BUILD "build-new build-old" 8,64,256 3
#   bash bench/ab.sh build ENV "- HRMT_CUDA_GLU_MUL=1,HRMT_CUDA_NORM_VEC=1" 64,256 2
# With HRMT_CUDA_GEMM_TUNE_CACHE=FILE in the environment every run takes the
# GEMM tuner's picks from one file (the first run writes it), so that the
# values are not compared on different GEMM kernels; leave it out for a
# switch that changes the GEMMs or their tuning (one value's picks would
# serve the other, or, for the options in the file's key, each run would
# tune again and rewrite the file). VAR = BUILD with builds of different CUDA
# sources: the key names the sources (cmake/HrmtSourceId.cmake), so each
# build would tune again and rewrite a shared file: leave it out there.
# Needs python3. Exit 0 when every run succeeded.
set -uo pipefail
if [ $# -lt 3 ] || [ "$1" = --help ]; then
  sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -ge 1 ] && [ "$1" = --help ] && exit 0
  exit 2
fi
build=$1 var=$2 values=$3
shift 3
batches=1,8,64,256 rounds=2
if [ $# -gt 0 ] && [ "$1" != -- ]; then batches=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != -- ]; then rounds=$1; shift; fi
[ $# -gt 0 ] && [ "$1" = -- ] && shift
extra=("$@")
[ ${#extra[@]} -gt 0 ] || extra=(--backend cuda --mode baseline --warmup 300 --iterations 20)
case $rounds in '' | *[!0-9]*) echo "ab.sh: ROUNDS '$rounds' is not a count" >&2; exit 2 ;; esac
read -r -a vals <<<"$values"
if [ "$var" = BUILD ]; then
  for v in "${vals[@]}"; do [ -x "$v/hrmt" ] || { echo "ab.sh: no $v/hrmt" >&2; exit 2; }; done
else
  [ -x "$build/hrmt" ] || { echo "ab.sh: no $build/hrmt" >&2; exit 2; }
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rc_all=0
for r in $(seq 1 "$rounds"); do
  order=("${!vals[@]}")
  if [ $((r % 2)) -eq 0 ]; then
    for ((j = 0; j < ${#vals[@]}; j++)); do order[j]=$((${#vals[@]} - 1 - j)); done
  fi
  for i in "${order[@]}"; do
    v=${vals[$i]} out="$tmp/r${r}_v${i}.json"
    if [ "$var" = BUILD ]; then
      "$v/hrmt" bench "${extra[@]}" --batch-sizes "$batches" --quiet --output "$out" \
        >"$tmp/log" 2>&1
    elif [ "$var" = ENV ]; then
      IFS=, read -r -a kv <<<"${v#-}"
      env "${kv[@]}" "$build/hrmt" bench "${extra[@]}" --batch-sizes "$batches" --quiet \
        --output "$out" >"$tmp/log" 2>&1
    elif [ "$v" = - ]; then
      env -u "$var" "$build/hrmt" bench "${extra[@]}" --batch-sizes "$batches" --quiet \
        --output "$out" >"$tmp/log" 2>&1
    else
      env "$var=$v" "$build/hrmt" bench "${extra[@]}" --batch-sizes "$batches" --quiet \
        --output "$out" >"$tmp/log" 2>&1
    fi || {
      rc_all=1
      echo "ab.sh: $var=$v round $r failed:" >&2
      tail -n 5 "$tmp/log" >&2
    }
  done
done
python3 - "$tmp" "$var" "$rounds" "${vals[@]}" <<'PY' || rc_all=1
import json, os, statistics, sys
tmp, var, rounds, vals = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
med = {}  # (value index, round, mode, batch) -> median ms
for i in range(len(vals)):
    for r in range(1, rounds + 1):
        p = os.path.join(tmp, f"r{r}_v{i}.json")
        if not os.path.exists(p):
            continue
        for row in json.load(open(p)):
            med[(i, r, row["mode"], row["batch_size"])] = row["total_inference_latency_ms"]["median"]
keys = sorted({(k[2], k[3]) for k in med})
print(f"median ms per ACT step, {var} = " + " / ".join(vals))
print("mode     batch round | " + " | ".join(f"{v:>8}" for v in vals))
for mode, b in keys:
    for r in range(1, rounds + 1):
        cells = [med.get((i, r, mode, b)) for i in range(len(vals))]
        print(f"{mode:8} {b:5} {r:5} | " + " | ".join(f"{c:8.3f}" if c is not None else "       -" for c in cells))
print("ratio to the first value (median over rounds):")
for mode, b in keys:
    per = [[med[(i, r, mode, b)] for r in range(1, rounds + 1) if (i, r, mode, b) in med] for i in range(len(vals))]
    if not per[0]:
        continue
    base = statistics.median(per[0])
    print(f"{mode:8} {b:5}       | " + " | ".join(f"{statistics.median(x) / base:8.3f}" if x else "       -" for x in per))
# Whether a ratio is more than the noise: in how many rounds each value ran
# faster than the first value in the same round (a 1% ratio with 3 of 6 is noise).
print("rounds in which the value was faster than the first value in the same round:")
for mode, b in keys:
    cells = []
    for i in range(len(vals)):
        pairs = [(med[(i, r, mode, b)], med[(0, r, mode, b)]) for r in range(1, rounds + 1)
                 if (i, r, mode, b) in med and (0, r, mode, b) in med]
        cells.append(f"{sum(v < f for v, f in pairs)} of {len(pairs)}" if i and pairs else "-")
    print(f"{mode:8} {b:5}       | " + " | ".join(f"{c:>8}" for c in cells))
PY
exit $rc_all
