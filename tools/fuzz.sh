#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz/ (clang, ASan + UBSan) in
# build-fuzz/ and runs each in turn; exits non-zero on the first crash, leak,
# timeout or out-of-memory, naming the input that caused it. docs/FUZZING.md.
#
#   tools/fuzz.sh                   every target for 10 s (the CI smoke run)
#   tools/fuzz.sh 600 model config  those targets for 600 s each
#   HRMT_FUZZ_RUNS=10000000 tools/fuzz.sh 0 tokens   a number of inputs instead of a time
#
# Environment: HRMT_FUZZ_BUILD_DIR (default build-fuzz), HRMT_FUZZ_ARGS (extra
# libFuzzer flags), HRMT_FUZZ_JOBS (build parallelism, default nproc).
# The corpus each run grows is kept in BUILD/corpus/<target> (read back next
# time); crash inputs go to BUILD/crashes/<target>/.
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then # the comment above is the usage
  sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
  exit 0
fi
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HRMT_FUZZ_BUILD_DIR:-$root/build-fuzz}
secs=${1:-10}
[ $# -gt 0 ] && shift
all=(safetensors model config puzzles tokens args)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")

# clang and its libFuzzer runtime (Debian 12 packages), beside install-deps.sh's.
bash "$root/tools/install-deps.sh"
missing=()
for p in clang libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "fuzz.sh: need root to apt-get install: ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Release \
  -DHRMT_FUZZ=ON -DHRMT_CUDA=OFF -DHRMT_BUILD_TESTS=OFF -DHRMT_BUILD_BENCH=OFF >/dev/null
build_targets=(hrmt_fuzz_seeds)
for t in "${targets[@]}"; do build_targets+=("fuzz_$t"); done
cmake --build "$build" -j"${HRMT_FUZZ_JOBS:-$(nproc)}" --target "${build_targets[@]}"

limit=(-max_total_time="$secs")
[ -n "${HRMT_FUZZ_RUNS:-}" ] && limit=(-runs="$HRMT_FUZZ_RUNS")
summary=""
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  dirs=("$corpus" "$build/fuzz-seeds/$t")
  [ -d "$root/tests/fuzz/regressions/$t" ] && dirs+=("$root/tests/fuzz/regressions/$t")
  d=$t
  [ "$t" = model ] && d=safetensors # a model file is a safetensors file
  dict=()
  [ -f "$root/tests/fuzz/dict/$d.dict" ] && dict=(-dict="$root/tests/fuzz/dict/$d.dict")
  log="$build/fuzz-$t.log"
  echo "=== fuzz_$t: ${limit[*]}"
  # The first directory is the corpus libFuzzer writes; seeds and saved
  # crashes (tests/fuzz/regressions/<target>, when there are any) are read. -timeout: an input running 10 s is a hang.
  # HRMT_FUZZ_ARGS is split into words on purpose (several flags).
  # shellcheck disable=SC2086
  if ! HRMT_CALIBRATE=0 "$build/fuzz/fuzz_$t" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$crashes/" "${dict[@]}" ${HRMT_FUZZ_ARGS:-} \
      "${dirs[@]}" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz.sh: fuzz_$t failed; the input is in $crashes/ (log: $log)." >&2
    echo "Replay: $build/fuzz/fuzz_$t $crashes/<file>; keep it as a regression test:" >&2
    echo "  cp $crashes/<file> tests/fuzz/regressions/$t/<what-it-does>" >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  summary+=$(printf '\n  fuzz_%-12s %12s inputs  %8s/s  corpus %s' "$t" "${runs:-?}" "${speed:-?}" \
    "$(find "$corpus" -type f | wc -l)")
done
echo "fuzz.sh: no crash in ${#targets[@]} target(s):$summary"
