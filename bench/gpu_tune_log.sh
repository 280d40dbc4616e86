#!/usr/bin/env bash
# Whether the GEMM tuner's picks at a step's rows are stable: runs one step of
# `hrmt bench` in RUNS separate processes for each value of VAR (the values
# alternating, so that drift over the runs falls on all of them) with
# HRMT_CUDA_GEMM_TUNE_LOG=1, and prints, for each GEMM shape tuned at the
# step's exact rows, every candidate's time in every run side by side, the
# pick of each run marked with '*'. A pick that moves between runs of one
# value is a near tie or noise; one that moves with the value is the value's.
#   bash bench/gpu_tune_log.sh BUILD_DIR [BATCH] [RUNS] [VAR] [VALUES]
# BATCH defaults to 256, RUNS to 2 and VAR to - (plain processes only,
# VALUES unused; VALUES defaults to "0 1"). The step must be past
# the first row bucket (more than 128 rows) for exact-M tuning to run.
# Needs python3. Exit 0 when every run succeeded.
set -uo pipefail
if [ $# -lt 1 ] || [ "$1" = --help ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
  [ $# -ge 1 ] && exit 0
  exit 2
fi
build=$1 batch=${2:-256} runs=${3:-2} var=${4:--} values=${5:-0 1}
[ "$var" = - ] && values=-
case $batch$runs in *[!0-9]*) echo "BATCH and RUNS must be whole numbers" >&2; exit 2 ;; esac
[ -x "$build/hrmt" ] || { echo "no $build/hrmt (the target is hrmt_cli)" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
rc=0 logs=()
for r in $(seq 1 "$runs"); do
  for v in $values; do
    f="$dir/run$r.$v.log" set=()
    [ "$v" = - ] || set=("$var=$v")
    env HRMT_CUDA_GEMM_TUNE_LOG=1 "${set[@]}" "$build/hrmt" bench --backend cuda \
      --mode baseline --batch-sizes "$batch" --warmup 0 --iterations 1 --quiet \
      >/dev/null 2>"$f" || rc=1
    logs+=("$f")
  done
done
[ $rc -eq 0 ] || echo "a run failed; its log follows the table"
python3 - "$var" "${logs[@]}" <<'PY'
import collections, os, re, sys
var, paths = sys.argv[1], sys.argv[2:]
P = "hrmt gemm tuning: "
# Lines at the step's exact rows ("rows = M"); the buckets' are "rows <= M".
PAT = [
    ("pinned", re.compile(r"(\S+) pinned, rows = (\d+): (\S+) us$")),
    ("cand", re.compile(r"(\S+) candidate \d+ \[(.*)\], rows = (\d+): (\S+) us$")),
    ("glu", re.compile(r"fused gate_up shape (\d+), rows = (\d+): (\S+) us$")),
    ("own", re.compile(r"(\S+) shape (\S+), rows = (\d+): (\S+) us$")),
    ("pick", re.compile(r"(\S+), rows = (\d+): (\S+) \((\S+) us; cuBLASLt \S+: (.*)\)$")),
    ("glupick", re.compile(r"fused gate_up, rows = (\d+): shape (-?\d+) \((\S+) us\)$")),
]
times = collections.OrderedDict()  # (shape, rows) -> config -> {run: us}
picked = collections.defaultdict(dict)  # (shape, rows) -> {run: config}
cols = []
for p in paths:
    col = os.path.basename(p)[3:-4]  # "R.V"
    cols.append(col)
    for l in open(p, errors="replace"):
        if not l.startswith(P):
            continue
        l = l[len(P):].strip()
        for kind, rx in PAT:
            m = rx.match(l)
            if not m:
                continue
            g = m.groups()
            if kind == "pinned":
                key, cfg, us = (g[0], g[1]), "pinned", g[2]
            elif kind == "cand":
                key, cfg, us = (g[0], g[2]), g[1], g[3]
            elif kind == "glu":
                key, cfg, us = ("fused gate_up", g[1]), "shape " + g[0], g[2]
            elif kind == "own":
                key, cfg, us = (g[0], g[2]), "own " + g[1], g[3]
            elif kind == "pick":
                key = (g[0], g[1])
                picked[key][col] = g[4] if g[2] == "cuBLASLt" else "own " + g[2]
                break
            else:
                picked[("fused gate_up", g[0])][col] = "shape " + g[1]
                break
            times.setdefault(key, collections.OrderedDict()).setdefault(cfg, {})[col] = float(us)
            break
if not times:
    print("no exact-M tuning lines: the step's rows are in the first bucket, or the log is off")
    sys.exit(0)
print(f"tuner times at the step's rows, us a call; columns run.{var if var != '-' else 'plain'}"
      " value; * the run's pick")
for key, cfgs in times.items():
    print(f"{key[0]}, rows {key[1]}:")
    print("  " + " ".join(f"{c:>9s}" for c in cols) + "  configuration")
    for cfg, t in cfgs.items():
        cells = []
        for c in cols:
            us = t.get(c)
            mark = "*" if picked[key].get(c) == cfg else " "
            cells.append(f"{'-' if us is None else f'{us:.2f}'}{mark}".rjust(9))
        print("  " + " ".join(cells) + f"  {cfg}")
    # A cuBLASLt pick that is the pinned algorithm has no candidate row.
    lost = {c: p for c, p in picked[key].items() if p not in cfgs}
    for c, p in lost.items():
        print(f"  pick of run {c}: {p}")
PY
if [ $rc -ne 0 ]; then
  for f in "${logs[@]}"; do tail -n 3 "$f"; done
fi
exit $rc
