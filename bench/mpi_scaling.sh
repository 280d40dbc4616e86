#!/usr/bin/env bash
# hrmt-mpi scaling on one host (docs/MPI.md): `hrmt run` over the same puzzle
# file as R ranks x T threads for several layouts of the host's CPUs (default
# on 16 CPUs: 1x16, 2x8, 4x4, 16x1), next to plain `hrmt run` with all CPUs,
# in one run. Prints a table: wall time of the whole job (start-up, model,
# input, steps, output), the compute time (slowest rank's ACT steps),
# puzzles/s and tokens/s, the speed-up over 1 rank, and whether the output is
# the same as plain hrmt's (it must be).
#
# usage: bench/mpi_scaling.sh BUILD_DIR [PUZZLES] [-- hrmt run options]
#   PUZZLES   puzzle count (default 512), random but fixed puzzles
#   options   default: --steps 1 (the built-in Sudoku-sized model, one ACT
#             step: about 7 TFLOP for 512 puzzles); e.g. -- --steps 2
#             --model m.safetensors --config c.json
# env: CONFIGS="1x16 2x8 4x4 16x1" layouts to run; MPIRUN_ARGS extra mpirun
#   options (e.g. "--mca btl self,vader"). Runs as root too.
# A run is its step count times more work: keep PUZZLES x steps such that
# the 1x16 row takes ~20 s and the whole table fits in 3 minutes.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,20p' "$0" >&2; exit 2; }
build=$(cd "$1" && pwd)
shift
puzzles=512
if [ $# -gt 0 ] && [ "$1" != "--" ]; then puzzles=$1; shift; fi
[ "${1:-}" = "--" ] && shift
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=(--steps 1)
hrmt=$build/hrmt
hrmt_mpi=$build/hrmt-mpi
for f in "$hrmt" "$hrmt_mpi"; do
  [ -x "$f" ] || { echo "mpi_scaling: $f missing (build with -DHRMT_MPI=ON)" >&2; exit 2; }
done

cpus=$(nproc)
cores=$(lscpu -p=CORE 2>/dev/null | grep -v '^#' | sort -u | wc -l)
mpirun_args=(--bind-to core)
# Hyper-threads: let a "CPU" be a hardware thread, so R x T can cover them all.
if [ "$cores" -gt 0 ] && [ "$cores" -lt "$cpus" ]; then mpirun_args+=(--use-hwthread-cpus); fi
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)
# shellcheck disable=SC2206
mpirun_args+=(${MPIRUN_ARGS:-})
if [ -z "${CONFIGS:-}" ]; then
  CONFIGS="1x$cpus"
  for r in 2 4; do [ $((cpus % r)) = 0 ] && [ "$r" -lt "$cpus" ] && CONFIGS+=" ${r}x$((cpus / r))"; done
  [ "$cpus" -gt 1 ] && CONFIGS+=" ${cpus}x1"
fi

work=$(mktemp -d /tmp/hrmt-mpi-scaling.XXXXXX)
trap 'rm -rf "$work"' EXIT
awk -v n="$puzzles" 'BEGIN { srand(7); for (i = 0; i < n; i++) { for (j = 0; j < 81; j++) {
  d = int(rand() * 18); printf "%s", d < 9 ? "." : d - 8 } print "" } }' > "$work/p.txt"

now() { date +%s.%N; }
json_num() { sed -n "s/^[[:space:]]*\"$2\":[[:space:]]*\([-0-9.eE+]*\).*/\1/p" "$1" | head -1; }
steps_of() { json_num "$1" steps; }
step_ms_of() { json_num "$1" mean_step_ms; }
notime() { grep -v '"mean_step_ms":' "$1"; }

cpu_name=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
echo "hrmt-mpi scaling: $puzzles puzzles, hrmt run ${opts[*]}"
echo "host: $(hostname), $cpus CPUs ($cores cores), ${cpu_name:-unknown CPU}; $(mpirun --version | head -1)"
echo "mpirun ${mpirun_args[*]} --map-by slot:PE=T -np R -x OMP_NUM_THREADS=T -x OMP_PROC_BIND=close -x OMP_PLACES=cores"
echo

t0=$(now)
OMP_PROC_BIND=close OMP_PLACES=cores "$hrmt" run --puzzles "$work/p.txt" --threads "$cpus" \
  "${opts[@]}" --json > "$work/ref.json"
t1=$(now)
steps=$(steps_of "$work/ref.json")
notime "$work/ref.json" > "$work/ref.notime"

printf '%-22s %8s %10s %10s %12s %8s %5s\n' "ranks x threads" "wall s" "compute s" "puzzles/s" \
  "tokens/s" "speedup" "same"
row() { # label wall_s step_ms same base_compute
  awk -v l="$1" -v w="$2" -v ms="$3" -v s="$steps" -v n="$puzzles" -v same="$4" -v base="$5" \
    'BEGIN { c = ms * s / 1000; printf "%-22s %8.2f %10.2f %10.1f %12.0f %7.2fx %5s\n",
             l, w, c, n / w, n * 81 * s / c, (base > 0 ? base / c : 1), same }'
}
ref_ms=$(step_ms_of "$work/ref.json")
base=$(awk -v ms="$ref_ms" -v s="$steps" 'BEGIN { print ms * s / 1000 }')
row "hrmt (no MPI) 1 x $cpus" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" "$ref_ms" "-" "$base"
for cfg in $CONFIGS; do
  r=${cfg%x*}
  t=${cfg#*x}
  t0=$(now)
  mpirun "${mpirun_args[@]}" --map-by "slot:PE=$t" -np "$r" -x OMP_NUM_THREADS="$t" \
    -x OMP_PROC_BIND=close -x OMP_PLACES=cores \
    "$hrmt_mpi" run --puzzles "$work/p.txt" "${opts[@]}" --json > "$work/$cfg.json"
  t1=$(now)
  same=no
  notime "$work/$cfg.json" | cmp -s - "$work/ref.notime" && same=yes
  row "hrmt-mpi $r x $t" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')" \
    "$(step_ms_of "$work/$cfg.json")" "$same" "$base"
done
echo
echo "compute s: ACT steps of the slowest rank (mean_step_ms x steps); wall s: the whole job."
echo "puzzles/s = puzzles / wall s; tokens/s = puzzles x 81 x steps / compute s;"
echo "speedup = compute s of plain hrmt / this row's; same: --json output (timing cut) equals plain hrmt's."
