#!/usr/bin/env bash
# The one script to run on the GPU machine (docs/CUDA.md says how to set it
# up). From the project root, with .devdeps carried along:
#
#   source .devdeps/env.sh; bash bench/gpu.sh
#
# Builds Release with CUDA ON under /tmp, runs the CUDA tests (they must run,
# not skip: HRMT_TEST_REQUIRE_CUDA=1), the step table beside PyTorch, the probe
# and one step under ncu, and later the CPU suite, compute-sanitizer
# memcheck and racecheck on `hrmt bench` and the CUDA test binaries, installs and links a tiny
# program against the installed static libhrmt.a with nothing but
# `pkg-config --static --cflags --libs hrmt`, then prints a summary table.
# Logs go to $OUT (at most 8 files come back: keep it that way) or bench/gpu-out.
# Exit status: 0 when every step passed.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
out=${OUT:-$root/bench/gpu-out}
mkdir -p "$out"
build=${HRMT_GPU_BUILD:-/tmp/hrmt-gpu-build}
prefix=${HRMT_GPU_PREFIX:-/tmp/hrmt-gpu-prefix}
jobs=$(nproc 2>/dev/null || echo 8)
[ -f .devdeps/env.sh ] && [ -z "${HRMT_DEVDEPS_SOURCED:-}" ] && {
  # shellcheck disable=SC1091
  source .devdeps/env.sh
  export HRMT_DEVDEPS_SOURCED=1
}
export PATH="$PATH:/usr/local/cuda/bin"
t0=$(date +%s)
# One device call may run 10 minutes: steps that would not fit are skipped
# (reported as SKIP with the reason), so the summary always comes back.
budget=${HRMT_GPU_BUDGET_S:-560}
san_timeout=${HRMT_GPU_SAN_TIMEOUT:-90}
# A racecheck run of one hrmt bench step took ~105 s (H100, session 51).
san_bench_s=${HRMT_GPU_SAN_BENCH_S:-150}
left() { echo $((budget - ($(date +%s) - t0))); }
# HRMT_GPU_SKIP: space-separated steps to leave out (reported as SKIP):
# ctest bench anchors ops probe ncu install sanitizers cpu (the hook runs
# before the sanitizers; ops: the fused-op bandwidth table; ncu: the
# costliest kernels of one step, HRMT_GPU_NCU_BATCH (256), bounded by
# HRMT_GPU_NCU_S (150 s), only with the bench step).
# HRMT_GPU_BENCH_EXTRA=0: the step table's default steps only (no pinned-GEMM,
# persistent, grid-level, launch-by-launch or f32 runs).
# HRMT_GPU_SAN_TOOLS: the compute-sanitizer tools (default "memcheck racecheck");
# HRMT_GPU_SAN_BINS: which test binaries (a glob under tests/, default test_cuda_*);
# HRMT_GPU_SAN_FILTERS: Criterion filters (space-separated) to run under every
# tool instead of the defaults below (e.g. one new kernel's small test);
# HRMT_GPU_SAN_BENCH_BATCHES: the batches of the `hrmt bench` runs each tool
# checks first (default 1,2,8; empty: none), one run a batch, each bounded
# by HRMT_GPU_SAN_BENCH_S (150) or by the budget left past 30 s when less
# (the test binaries' runs by HRMT_GPU_SAN_TIMEOUT, 90).
# HRMT_GPU_CMAKE_ARGS: extra configure arguments; HRMT_GPU_TARGETS: build only
# these targets (space-separated) instead of everything.
skip() { case " ${HRMT_GPU_SKIP:-} " in *" $1 "*) return 0 ;; esac; return 1; }
# Contexts skip the cache calibration (0.1-0.3 s each), as under ctest.
export HRMT_CALIBRATE=0
declare -a NAMES=() RESULTS=() NOTES=()
record() { NAMES+=("$1"); RESULTS+=("$2"); NOTES+=("$3"); }
stamp() { echo "=== [$(($(date +%s) - t0))s] $*"; }
summary_log="$out/summary.txt"

# ---- 1. build (Release, CUDA ON) -------------------------------------------
stamp "configure + build ($build)"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  nvcc --version | tail -n 2 || true
  # shellcheck disable=SC2086
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHRMT_CUDA=ON \
    -DCMAKE_INSTALL_PREFIX="$prefix" ${HRMT_GPU_CMAKE_ARGS:-} &&
    cmake --build "$build" -j"$jobs" ${HRMT_GPU_TARGETS:+--target $HRMT_GPU_TARGETS}
} >"$out/build.log" 2>&1
build_rc=$?
if [ $build_rc -eq 0 ]; then
  record build PASS "Release, HRMT_CUDA=ON"
else
  record build FAIL "see build.log"
  tail -n 40 "$out/build.log"
fi

# ---- 2. the CUDA tests ---------------------------------------------------------
# Each test_cuda_* binary once, its cases HRMT_GPU_TEST_JOBS at a time (default
# 4; test_cuda_probe's one at a time), with --verbose so that the same run
# says how many passed, failed and skipped: the CUDA cases must run, not skip,
# with a device present. (Until session 29 ctest ran them with --jobs 1 and
# then each binary ran again for the counts: ~245 s of a call on the H200,
# where test_cuda_model alone takes ~73 s at 4 jobs.) The CPU suite runs last
# (step 7) with whatever time is left. Each binary is bounded by the budget left
# past HRMT_GPU_TEST_RESERVE_S (150 s, for the table and what follows) and
# each case by HRMT_GPU_TEST_CASE_S (240 s): a hung kernel or a suite past the
# call's limit ends as FAIL with the cases counted so far (--verbose prints
# each as it ends), not as a call with no summary.
if [ $build_rc -eq 0 ] && skip ctest; then
  record "CUDA tests" SKIP "HRMT_GPU_SKIP"
elif [ $build_rc -eq 0 ]; then
  stamp "CUDA tests, ${HRMT_GPU_TEST_JOBS:-4} jobs"
  ran=0
  for t in "$build"/tests/test_cuda_*; do
    [ -x "$t" ] || continue
    ran=1
    n=$(basename "$t")
    j=${HRMT_GPU_TEST_JOBS:-4}
    [ "$n" = test_cuda_probe ] && j=1 # its latencies and bandwidths need the GPU alone
    cap=$(($(left) - ${HRMT_GPU_TEST_RESERVE_S:-150}))
    [ "$cap" -lt 30 ] && cap=30
    HRMT_TEST_REQUIRE_CUDA=1 timeout "$cap" "$t" --verbose --jobs "$j" \
      --timeout "${HRMT_GPU_TEST_CASE_S:-240}" >"$out/tmp-$n.log" 2>&1
    rc=$?
    cut=""
    [ $rc -eq 124 ] && cut="; cut after ${cap}s, the counts are partial"
    skips=$(grep -c '^\[SKIP\]' "$out/tmp-$n.log")
    passes=$(grep -c '^\[PASS\]' "$out/tmp-$n.log")
    fails=$(grep -c '^\[FAIL\]' "$out/tmp-$n.log")
    verdict=PASS
    [ "$skips" -gt 0 ] && verdict=WARN # a skip with a GPU present: look at why
    { [ $rc -ne 0 ] || [ "$passes" -eq 0 ] || [ "$fails" -gt 0 ]; } && verdict=FAIL
    record "$n" "$verdict" "$passes passed, $fails failed, $skips skipped (exit $rc$cut)"
    if [ "$verdict" = FAIL ]; then
      grep -E '^\[FAIL\]|\[----\]|Assertion|CRASH|Crash' "$out/tmp-$n.log" | head -n 20
      cat "$out/tmp-$n.log" >>"$out/ctest.log"
    fi
    rm -f "$out/tmp-$n.log"
  done
  [ $ran -eq 1 ] || record "CUDA tests" FAIL "no test_cuda_* binary in $build/tests"
fi

# ---- 3. the issue's table: ACT steps, fused-op bandwidth, memory tiers ----------
# One ACT step (bf16, default model) at batch 1, 8, 64, 256, both schedules, as
# graph replays (the default) and kernel by kernel
# (plus f32 at 1 and 64); every fused op at >= 512 MB next to a device copy
# of the same size measured in the same run; CPU vs GPU memory tiers.
if [ $build_rc -eq 0 ] && skip bench; then
  record "benchmarks" SKIP "HRMT_GPU_SKIP"
elif [ $build_rc -eq 0 ]; then
  stamp "model step benchmark"
  (
    "$build/hrmt" info
    # Steady state on both sides: the GPU's first few hundred steps after a
    # load run up to ~5% slower at small batches (H100, session 46), so
    # hrmt warms up 300 steps and PyTorch 100 (its steps are 2-70x longer).
    # Two rounds, tiered first then baseline first: in one order the second
    # schedule read up to ~5% slow at 256 after the first's heavy run (H100,
    # session 51).
    "$build/hrmt" bench --backend cuda --batch-sizes 1,8,64,256 --warmup 300 --iterations 10 \
      --rounds 2 --quiet --mode compare --output "$out/steps.json"
    # HRMT_GPU_BENCH_EXTRA=0: the default steps only (a call short of time).
    [ "${HRMT_GPU_BENCH_EXTRA:-1}" = 0 ] && exit 0
    echo "--- the same with the pinned GEMM algorithm at every M (HRMT_CUDA_GEMM_TUNE=0)"
    HRMT_CUDA_GEMM_TUNE=0 "$build/hrmt" bench --backend cuda --batch-sizes 1,8,64,256 \
      --iterations 10 --quiet --mode compare --output "$out/steps_pinned.json"
    echo "--- the same with the persistent L-level kernel as the tiered schedule (HRMT_CUDA_L_PERSIST=1)"
    HRMT_CUDA_L_PERSIST=1 "$build/hrmt" bench --backend cuda --batch-sizes 1,8,64,256 \
      --iterations 10 --quiet --mode compare --output "$out/steps_persist.json"
    echo "--- baseline with each level as one grid-wide kernel (HRMT_CUDA_GRID=1)"
    HRMT_CUDA_GRID=1 "$build/hrmt" bench --backend cuda --batch-sizes 1,8,64,256 \
      --iterations 10 --quiet --mode baseline --output "$out/steps_grid.json"
    echo "--- the same steps launched kernel by kernel (HRMT_CUDA_GRAPHS=0)"
    HRMT_CUDA_GRAPHS=0 "$build/hrmt" bench --backend cuda --batch-sizes 1,8,64,256 \
      --iterations 10 --quiet
    "$build/hrmt" bench --backend cuda --dtype f32 --batch-sizes 1,64 --iterations 5 --quiet
  ) >"$out/model.log" 2>&1
  rc=$?
  record "model step bench" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" \
    "$(grep -c '^tiered\|^baseline' "$out/model.log") rows; model.log"
  # The table's inputs that exist (HRMT_GPU_BENCH_EXTRA=0 leaves some out).
  targs=("$out/steps.json")
  for kf in pinned:steps_pinned persist:steps_persist grid:steps_grid; do
    [ -f "$out/${kf#*:}.json" ] && targs+=("--${kf%%:*}" "$out/${kf#*:}.json")
  done
  # Shown at once too: a call cut short still reports the steps.
  python3 bench/gpu_table.py "${targs[@]}" || true
  # PyTorch on the official HRM code (sapientinc/HRM's models/ and config/ in
  # HRMT_GPU_HRM_SRC, default .hrm-src), eager and torch.compile + CUDA graphs,
  # in this same call; then the side-by-side table.
  hrm_src=${HRMT_GPU_HRM_SRC:-.hrm-src}
  if skip anchors; then
    record "torch anchors" SKIP "HRMT_GPU_SKIP"
  elif [ ! -d "$hrm_src/models" ]; then
    record "torch anchors" SKIP "no official HRM sources in $hrm_src"
  else
    stamp "PyTorch anchors (official HRM code)"
    timeout $(($(left) > 360 ? 300 : $(left) - 60)) python3 bench/torch_anchor.py \
      --hrm-src "$hrm_src" --batches 1,8,64,256 --modes eager,reduce-overhead --iters 10 \
      --warmup 100 --json "$out/torch.json" 2>&1 | tee "$out/torch_anchor.log"
    rc=${PIPESTATUS[0]}
    record "torch anchors" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "rc $rc; torch_anchor.log"
  fi
  [ -f "$out/torch.json" ] && targs+=(--torch "$out/torch.json")
  python3 bench/gpu_table.py "${targs[@]}" >"$out/step_table.log" 2>&1
  rc=$?
  record "step table" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" \
    "$(tail -n 1 "$out/step_table.log" | cut -c1-80)"
  if skip ops; then
    record "fused-op bandwidth" SKIP "HRMT_GPU_SKIP"
  else
    stamp "fused-op bandwidth"
    "$build/hrmt-bench-cuda-ops" --mb 512 --reps 20 >"$out/cuda_ops.log" 2>&1
    rc=$?
    record "fused-op bandwidth" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" \
      "$(grep -E '^(bar|copy median)' "$out/cuda_ops.log" | tr '\n' ' ' | cut -c1-90)"
  fi
  if skip probe; then
    record "probe --compare" SKIP "HRMT_GPU_SKIP"
  else
    stamp "probe --compare"
    "$build/hrmt" probe --compare --json --quiet >"$out/probe_compare.json" 2>"$out/probe.log" &&
      "$build/hrmt" probe --input "$out/probe_compare.json" >>"$out/probe.log" 2>&1
    rc=$?
    record "probe --compare" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "probe.log"
  fi
  # The costliest kernels of one step under ncu (--clock-control none), with
  # the bytes they moved through L2 and DRAM, beside the probe's ceilings of
  # the same call (issue 14's summary); the GEMM tuner's launches at load
  # run under ncu too, hence a bound of its own.
  ncu_batch=${HRMT_GPU_NCU_BATCH:-256} ncu_s=${HRMT_GPU_NCU_S:-150}
  if skip ncu; then
    record "ncu, batch $ncu_batch" SKIP "HRMT_GPU_SKIP"
  elif ! command -v ncu >/dev/null; then
    record "ncu, batch $ncu_batch" SKIP "no ncu on PATH"
  elif [ "$(left)" -lt $((ncu_s + 60)) ]; then
    record "ncu, batch $ncu_batch" SKIP "out of time ($(left) s left)"
  else
    stamp "ncu: one step's kernels at batch $ncu_batch"
    timeout "$ncu_s" bash bench/gpu_profile.sh "$build" "$ncu_batch" >"$out/ncu.log" 2>&1
    rc=$?
    [ $rc -eq 124 ] && echo "stopped after ${ncu_s}s" >>"$out/ncu.log"
    # The notes: gpu_profile.sh's line of the three costliest kernels.
    if [ $rc -eq 0 ]; then
      record "ncu, batch $ncu_batch" PASS "$(sed -n 's/^costliest: //p' "$out/ncu.log")"
    else
      record "ncu, batch $ncu_batch" FAIL "rc $rc; ncu.log"
    fi
  fi
fi

# ---- 4. an outside program against the INSTALLED static libhrmt.a -------------
# Only `pkg-config --static --cflags --libs hrmt`: proves hrmt.pc carries every
# library a static link needs (cudart_static's -ldl -lrt -lpthread, cuBLASLt,
# -lstdc++) and that the program needs only the driver at run time.
if [ $build_rc -eq 0 ] && skip install; then
  record "installed static link" SKIP "HRMT_GPU_SKIP"
elif [ $build_rc -eq 0 ]; then
  stamp "install + link an outside program"
  {
    rm -rf "$prefix" && cmake --install "$build" --prefix "$prefix" || exit 1
    pcdir=$(dirname "$(find "$prefix" -name hrmt.pc | head -n 1)")
    export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    if command -v pkg-config >/dev/null; then
      flags=$(pkg-config --static --cflags --libs hrmt) || exit 1
    else # no pkg-config on the machine: read the same fields from hrmt.pc
      pcf="$pcdir/hrmt.pc"
      pfx=$(cd "$pcdir/$(sed -n 's/^prefix=\${pcfiledir}\///p' "$pcf")" 2>/dev/null && pwd)
      [ -n "$pfx" ] || pfx=$(sed -n 's/^prefix=//p' "$pcf")
      sub() { sed -e "s|\${prefix}|$pfx|g; s|\${exec_prefix}|$pfx|g" \
        -e "s|\${libdir}|$pfx/lib|g; s|\${includedir}|$pfx/include|g"; }
      libdir=$(sed -n 's/^libdir=//p' "$pcf" | sub)
      inc=$(sed -n 's/^includedir=//p' "$pcf" | sub)
      flags="-I$inc -L$libdir -lhrmt $(sed -n 's/^Libs.private: //p' "$pcf" | sub)"
    fi
    echo "flags: $flags"
    app=/tmp/hrmt-gpu-app
    mkdir -p "$app"
    # shellcheck disable=SC2086
    cc -std=c11 -O2 -o "$app/app" bench/gpu_app.c $flags || exit 1
    echo "ldd:"
    ldd "$app/app" | grep -E 'cuda|cublas|stdc|hrmt' || true
    "$app/app"
  } >"$out/install.log" 2>&1
  rc=$?
  record "installed static link" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" \
    "$(grep -E '^(op|model)' "$out/install.log" | tr '\n' ';' | cut -c1-90)"
  [ $rc -eq 0 ] || tail -n 20 "$out/install.log"
fi

# ---- 5. HOOK: extra commands ------------------------------------------------
# HRMT_GPU_HOOK: shell commands run here (with $build and $out set), output in
# hook.log: one-off experiments without editing this script. They get the
# budget's time left but HRMT_GPU_HOOK_RESERVE seconds (default 60, for the
# steps after and the summary), at least 10: a hook that runs over is stopped
# and reported, and the call still returns its summary.
if [ -n "${HRMT_GPU_HOOK:-}" ] && [ $build_rc -eq 0 ]; then
  stamp "hook"
  hook_s=$(($(left) - ${HRMT_GPU_HOOK_RESERVE:-60}))
  [ "$hook_s" -lt 10 ] && hook_s=10
  build="$build" out="$out" timeout "$hook_s" bash -c "$HRMT_GPU_HOOK" >"$out/hook.log" 2>&1
  rc=$?
  if [ $rc -eq 124 ]; then
    record "hook" FAIL "stopped after ${hook_s}s (hook.log)"
  else
    record "hook" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "hook.log"
  fi
fi

# ---- 6. compute-sanitizer on hrmt bench and the CUDA test binaries ----------
# Criterion runs each test in a child process; the sanitizer is told to follow
# it (--target-processes all, --jobs 1: one child at a time), but a test's
# kernels under memcheck ran as fast as without it (session 48: 1.9 s where a
# batch-1 step through hrmt bench takes ~3.6 s), so the children may go
# unchecked. Each tool therefore first runs `hrmt bench` itself, a process
# with no fork: both schedules at batch 1, 2 and 8 (every form the step takes
# there: cluster and pair forms, the tiered L-level), one step each, one
# bounded run a batch.
san_bench_batches=${HRMT_GPU_SAN_BENCH_BATCHES:-1,2,8}
# The tool's verdict so far (rc_all) with one more run's status: a failure
# stays a failure whatever runs after it; a time-out (124) only marks a pass
# partial.
san_fold() {
  [ "$1" -eq 0 ] && return
  if [ "$1" -eq 124 ]; then
    [ "$rc_all" -eq 0 ] && rc_all=124
  else
    rc_all=$1
  fi
}
# One run of $tool (options $extra): san_run LIMIT_S OK PROGRAM ARGS...,
# logged into $out/$tool.log; sets rc. Racecheck's hazards inside cuBLASLt's
# nvjet kernels (TMA and mbarrier synchronisation it does not follow) are not
# counted where the program itself succeeded (its log matches OK); any other
# hazard fails.
san_run() {
  local lim=$1 ok=$2
  shift 2
  # shellcheck disable=SC2086
  HRMT_CUDA_GEMM_TUNE=0 timeout "$lim" compute-sanitizer --tool "$tool" $extra \
    --error-exitcode 86 "$@" >"$out/san-one.log" 2>&1
  rc=$?
  cat "$out/san-one.log" >>"$out/$tool.log"
  if [ $rc -eq 86 ] && [ "$tool" = racecheck ] && grep -q "$ok" "$out/san-one.log" &&
    grep -q 'Race reported' "$out/san-one.log" &&
    ! grep -E 'Race reported' "$out/san-one.log" | grep -qv 'nvjet'; then
    echo "### only cuBLASLt (nvjet) hazards: $(grep -c 'Race reported' "$out/san-one.log") reports, not counted" \
      >>"$out/$tool.log"
    rc=0
  fi
  [ $rc -eq 124 ] && echo "### timed out after ${lim}s" >>"$out/$tool.log"
}
if skip sanitizers; then
  record sanitizers SKIP "HRMT_GPU_SKIP"
elif [ $build_rc -eq 0 ] && command -v compute-sanitizer >/dev/null; then
  for tool in ${HRMT_GPU_SAN_TOOLS:-memcheck racecheck}; do
    stamp "compute-sanitizer --tool $tool"
    : >"$out/$tool.log"
    rc_all=0
    # One run a batch, each with its own time limit: racecheck took more
    # than 90 s over batches 1, 2 and 8 in one run (session 51), which then
    # said nothing about any of them.
    IFS=, read -r -a sbatches <<<"$san_bench_batches"
    for sb in "${sbatches[@]}"; do
      [ -x "$build/hrmt" ] || break
      # The run's limit: HRMT_GPU_SAN_BENCH_S, or what the budget has left
      # past a 30 s margin when that is less (a 210 s budget with a 180 s
      # limit once skipped the run for want of 2 s); skipped below 30 s.
      lim=$(($(left) - 30))
      [ "$lim" -gt "$san_bench_s" ] && lim=$san_bench_s
      if [ "$lim" -lt 30 ]; then
        echo "### hrmt bench --batch-sizes $sb: skipped, out of time ($(left) s left, 60 needed)" \
          >>"$out/$tool.log"
        san_fold 124
        continue
      fi
      echo "### hrmt bench --batch-sizes $sb (limit ${lim} s)" >>"$out/$tool.log"
      extra=""
      [ "$tool" = memcheck ] && extra="--leak-check full"
      # Its success: the latency table printed after every run.
      san_run "$lim" 'median ms' "$build/hrmt" bench --backend cuda --mode compare \
        --batch-sizes "$sb" --warmup 0 --iterations 1
      san_fold $rc
    done
    for t in "$build"/tests/${HRMT_GPU_SAN_BINS:-test_cuda_*}; do
      [ -x "$t" ] || continue
      extra=""
      # API errors are not reported: the tests provoke cudaMalloc failures on
      # purpose (device OOM paths), and every API status is checked by hrmt.
      [ "$tool" = memcheck ] && extra="--leak-check full --report-api-errors no"
      # racecheck: our kernels that use shared memory, on small cases (it is
      # slow): not cuBLASLt's GEMMs, not the 1 GiB probe sweeps. One run per
      # filter, each with its own time limit. The persistent L-level test
      # runs the baseline too (san_run: cuBLASLt's hazards not counted).
      filters=("")
      if [ -n "${HRMT_GPU_SAN_FILTERS:-}" ]; then
        read -r -a filters <<<"$HRMT_GPU_SAN_FILTERS"
      elif [ "$tool" = racecheck ]; then
        case "$(basename "$t")" in
          test_cuda_ops) filters=('!(*gemm*)') ;;
          test_cuda_model) filters=('cuda_model/golden_*_bf16' 'cuda_model/persistent_equals_baseline_short_seq' 'cuda_model/grid_equals_launches_short_seq') ;;
          test_cuda_probe) filters=('cuda_probe/caps_describe_every_tier') ;;
        esac
      fi
      for f in "${filters[@]}"; do
        if [ "$(left)" -lt $((san_timeout + 30)) ]; then
          echo "### $(basename "$t") $f: skipped, out of time" >>"$out/$tool.log"
          san_fold 124
          continue
        fi
        echo "### $(basename "$t") $f" >>"$out/$tool.log"
        filter=()
        [ -n "$f" ] && filter=(--filter "$f")
        # GEMM tuning (thousands of small cuBLASLt calls per model load) only
        # where a test asks for it (cuda_model/gemm_tuning_keeps_bits sets it).
        HRMT_TEST_REQUIRE_CUDA=1 san_run "$san_timeout" 'Synthesis:.*Failing: 0 | Crashing: 0' \
          --target-processes all "$t" --jobs 1 "${filter[@]}"
        san_fold $rc
      done
    done
    rm -f "$out/san-one.log"
    errs=$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/$tool.log" | grep -v ' 0 ' | head -n 3 |
      tr '\n' ' ')
    verdict=$([ $rc_all -eq 0 ] && echo PASS || echo FAIL)
    nv=$(grep -c '^### only cuBLASLt' "$out/$tool.log")
    [ $rc_all -eq 0 ] && [ "$nv" -gt 0 ] &&
      errs="0 errors in hrmt's kernels (cuBLASLt nvjet hazards not counted in $nv run)"
    [ $rc_all -eq 124 ] && verdict=PART && errs="timed out / out of time; ${errs:-no errors seen}"
    record "$tool" "$verdict" "${errs:-0 errors}"
  done
else
  record sanitizers SKIP "no build or no compute-sanitizer"
fi

# ---- 7. the CPU suite on this host -------------------------------------------
if [ $build_rc -eq 0 ] && skip cpu; then
  record "ctest -E cuda" SKIP "HRMT_GPU_SKIP"
elif [ $build_rc -eq 0 ]; then
  if [ "$(left)" -gt 200 ]; then
    stamp "ctest -E cuda -j$jobs (the CPU suite on the GPU machine's host)"
    (cd "$build" && timeout $(($(left) - 20)) ctest --output-on-failure -j"$jobs" -E cuda) \
      >"$out/ctest-cpu.log" 2>&1
    rc=$?
    line=$(grep -E 'tests passed|tests failed' "$out/ctest-cpu.log" | tail -n 1)
    record "ctest -E cuda" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "${line:-rc $rc}"
  else
    record "ctest -E cuda" SKIP "out of time ($(left) s left)"
  fi
fi

# ---- summary (last) ---------------------------------------------------------
fail=0
{
  echo
  echo "hrmt GPU run: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)," \
    "$(($(date +%s) - t0)) s"
  printf '%-24s %-6s %s\n' step result notes
  printf '%-24s %-6s %s\n' ------------------------ ------ -----
  for i in "${!NAMES[@]}"; do
    printf '%-24s %-6s %s\n' "${NAMES[$i]}" "${RESULTS[$i]}" "${NOTES[$i]}"
    [ "${RESULTS[$i]}" = FAIL ] && fail=1
  done
  if [ -f "$out/step_table.log" ]; then
    echo
    echo "ms per ACT step, bf16, default model (medians; steps.json, torch.json):"
    cat "$out/step_table.log"
  fi
  if [ -f "$out/ncu.log" ]; then
    echo
    echo "the costliest kernels (ncu --clock-control none; ncu.log):"
    head -n 7 "$out/ncu.log"
    grep -E '^(fastest|cache|main memory)' "$out/probe.log" 2>/dev/null |
      awk '{ printf "probe, same call: GPU %s %s GB/s read\n", $(NF - 4), $NF }'
  fi
} | tee "$summary_log"
for i in "${!RESULTS[@]}"; do [ "${RESULTS[$i]}" = FAIL ] && fail=1; done
# The device tool brings back at most 8 files: every log in one archive, the
# summary and the probe JSON (for --plot off the GPU machine) beside it.
if [ -n "${OUT:-}" ]; then
  (cd "$out" && ls *.log >/dev/null 2>&1 && tar czf logs.tgz ./*.log ./*.json 2>/dev/null &&
    rm -f ./*.log ./steps*.json ./torch.json)
fi
exit $fail
