#!/usr/bin/env bash
# Two-host hrmt-mpi run on one machine (docs/MPI.md): two network namespaces
# (hrmt-a, hrmt-b) joined by a veth pair whose ends are both called hrmt0
# (10.77.0.1 and 10.77.0.2, addresses only inside the namespaces), each with
# its own host name (UTS namespace). mpirun starts in hrmt-a; the remote
# daemon is started in hrmt-b by a small plm_rsh_agent script (no ssh), and
# the ranks talk over Open MPI's TCP transport on hrmt0 only
# (--mca btl tcp,self). The output of `hrmt-mpi run` across the two "hosts"
# must be byte-identical to `hrmt run` in one process: text, --json, --dump
# (timings cut, as in tests/test_mpi/test_mpi_run.c).
#
# usage: sudo tools/mpi-netns.sh [BUILD_DIR] [NP]   (default build, 3 ranks:
#        two on hrmt-a, the rest on hrmt-b). Needs root, iproute2, util-linux
#        (unshare), Open MPI. Removes the namespaces on exit. Maintainer
#        script, not part of CI.
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then # the comment above is the usage
  sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
  exit 0
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
np=${2:-3}
hrmt=$build/hrmt
hrmt_mpi=$build/hrmt-mpi
for f in "$hrmt" "$hrmt_mpi"; do
  [ -x "$f" ] || { echo "mpi-netns: $f missing (build with -DHRMT_MPI=ON)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "mpi-netns: needs root (ip netns)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "mpi-netns: mpirun not found" >&2; exit 2; }

work=$(mktemp -d /tmp/hrmt-netns.XXXXXX)
cleanup() {
  ip netns del hrmt-a 2>/dev/null || true
  ip netns del hrmt-b 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
ip netns del hrmt-a 2>/dev/null || true # left over from an interrupted run
ip netns del hrmt-b 2>/dev/null || true

echo "== namespaces hrmt-a (10.77.0.1) and hrmt-b (10.77.0.2), veth hrmt0 <-> hrmt0"
ip netns add hrmt-a
ip netns add hrmt-b
ip link add hrmt-va type veth peer name hrmt-vb
ip link set hrmt-va netns hrmt-a
ip link set hrmt-vb netns hrmt-b
ip -n hrmt-a link set hrmt-va name hrmt0
ip -n hrmt-b link set hrmt-vb name hrmt0
ip -n hrmt-a addr add 10.77.0.1/24 dev hrmt0
ip -n hrmt-b addr add 10.77.0.2/24 dev hrmt0
for ns in hrmt-a hrmt-b; do
  ip -n $ns link set lo up
  ip -n $ns link set hrmt0 up
done
for ns in hrmt-a hrmt-b; do echo "   $ns: $(ip -n $ns -br addr show dev hrmt0)"; done
echo "   10.77.0.x addresses outside the namespaces: $(ip -o addr show | grep -c '10\.77\.0\.' || true)"

# The rsh agent: called as `agent [options] HOST COMMAND...` like ssh; runs
# COMMAND in HOST's namespace under that namespace's host name.
cat > "$work/agent" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host=$1; shift
case "$host" in
  10.77.0.1) ns=hrmt-a ;;
  10.77.0.2) ns=hrmt-b ;;
  *) echo "agent: unknown host $host" >&2; exit 255 ;;
esac
exec ip netns exec "$ns" unshare --uts /bin/sh -c "hostname $ns; $*"
EOF
chmod +x "$work/agent"
printf '10.77.0.1 slots=2\n10.77.0.2 slots=%d\n' $(( np > 2 ? np - 2 : 1 )) > "$work/hosts"

# Ten puzzles, a comment and a blank line among them (as the CI test).
{
  echo "# ten puzzles"
  for i in $(seq 1 10); do
    [ "$i" = 5 ] && echo
    awk -v s="$i" 'BEGIN { srand(s); for (j = 0; j < 81; j++) {
      d = int(rand() * 18); printf "%s", d < 9 ? "." : d - 8 } print "" }'
  done
} > "$work/puzzles.txt"
golden=$root/tests/data/golden/hrm/tiny-rope
args=(--model "$golden/model.safetensors" --config "$golden/case.json" --puzzles "$work/puzzles.txt")

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() {
  ip netns exec hrmt-a unshare --uts /bin/sh -c 'hostname hrmt-a; exec "$@"' sh \
    timeout -k 10 300 mpirun --hostfile "$work/hosts" -np "$np" \
    --mca plm_rsh_agent "$work/agent" \
    --mca btl tcp,self --mca btl_tcp_if_include hrmt0 --mca oob_tcp_if_include hrmt0 \
    "$@"
}

echo "== where the ranks run"
mpi "$hrmt_mpi" ranks
echo "== hrmt run (one process) vs hrmt-mpi run ($np ranks, two hosts)"
"$hrmt" run "${args[@]}" --dump "$work/one.st" > "$work/one.txt"
mpi "$hrmt_mpi" run "${args[@]}" --dump "$work/two.st" > "$work/two.txt"
"$hrmt" run "${args[@]}" --json > "$work/one.json"
mpi "$hrmt_mpi" run "${args[@]}" --json > "$work/two.json"
notime() { sed -e '1s/, [0-9.]* ms\/step$//' -e '/"mean_step_ms":/d' "$1"; }
fail=0
check() {
  if cmp -s "$2" "$3"; then echo "   $1: identical ($(wc -c < "$2") bytes)"
  else echo "   $1: DIFFERENT"; fail=1; fi
}
notime "$work/one.txt" > "$work/one.t"; notime "$work/two.txt" > "$work/two.t"
notime "$work/one.json" > "$work/one.j"; notime "$work/two.json" > "$work/two.j"
check "text (ms/step cut)" "$work/one.t" "$work/two.t"
check "--json (mean_step_ms cut)" "$work/one.j" "$work/two.j"
check "--dump" "$work/one.st" "$work/two.st"
head -1 "$work/two.txt" | sed 's/^/   /'
echo "== a malformed line (line 11) in the last shard"
sed -i '11s/.$//' "$work/puzzles.txt"
set +e
t0=$(date +%s)
mpi "$hrmt_mpi" run "${args[@]}" > "$work/bad.out" 2> "$work/bad.err"
rc=$?
set -e
echo "   exit $rc after $(( $(date +%s) - t0 )) s; message: $(grep 'hrmt run' "$work/bad.err")"
if [ "$rc" = 0 ] || [ "$rc" = 124 ] || ! grep -q 'puzzles.txt:11:' "$work/bad.err"; then fail=1; fi
if [ $fail = 0 ]; then echo "mpi-netns: PASS"; else echo "mpi-netns: FAIL"; fi
exit $fail
