#!/usr/bin/env bash
# The first device run of the opt-in switches written while no GPU was lent
# (sessions 30-32): HRMT_CUDA_FUSED_NORM (its two-CTA kernel of session 31),
# HRMT_CUDA_NORM_VEC, HRMT_CUDA_ATTN_ROPE_ONCE, HRMT_CUDA_GLU_MUL,
# HRMT_CUDA_GLU_WRES (with the tuner's log of every gate_up shape's time);
# session 33's HRMT_CUDA_CLUSTER_NORM_PUSH, HRMT_CUDA_QKV_ATTN_PUSH and
# HRMT_CUDA_ROPE_EARLY; sessions 48-49's HRMT_CUDA_QKV_ATTN_BULK (first run
# in session 50: TRIAL_ONLY=HRMT_CUDA_QKV_ATTN_BULK TRIAL_STEPS="tests
# memcheck ab"; the default since session 51, after TRIAL_STEPS=suite);
# session 54's HRMT_CUDA_GLU_WRES_KB (run in session 55, dropped: no gain,
# docs/CUDA-KERNELS.md); session 55's HRMT_CUDA_CLUSTER_NORM_OWNER8 (run in
# session 56, a default in clusters of 8 since); session 58's
# HRMT_CUDA_ATTN_STREAM (run in session 60, a default since); session 59's
# HRMT_CUDA_GEMM_TUNE_GAPS (run in session 60, removed: the picks did not
# move); session 61's HRMT_CUDA_TILE_LINKS (not yet run; its A/B times the
# tiered schedule); each of the others is now a default or was measured.
# For each: its same-bytes tests (failing, not skipping, without a device),
# memcheck on one step with it on through `hrmt bench` at the batches it
# serves (a plain process: Criterion's per-test children may go unchecked,
# docs/CUDA.md), an A/B of the step (bench/ab.sh: values
# alternating, side by side) at the batches where its kernel runs, and ncu
# kernel times at batch 256 with it off and on; then all of them on at once
# against none. As bench/gpu.sh's hook, in two calls (all parts take ~11
# minutes by estimate; a call has ~8 after the build): TRIAL_STEPS="tests
# memcheck tune", then TRIAL_STEPS="ab ncu all tiles":
#   HRMT_GPU_BUDGET_S=560 HRMT_GPU_HOOK_RESERVE=5 HRMT_GPU_CMAKE_ARGS=-DHRMT_MPI=OFF \
#   HRMT_GPU_SKIP="ctest bench anchors ops probe install cpu sanitizers" \
#   HRMT_GPU_TARGETS="hrmt hrmt_cli test_cuda_model" \
#   HRMT_GPU_HOOK='build=$build TRIAL_STEPS="tests memcheck tune" bash bench/gpu_trial.sh' \
#   bash bench/gpu.sh
# Then the tiered schedule's tile size (HRMT_CUDA_TILE_SAMPLES; the default
# rule sizes a tile by shared memory x SMs, ~30 MB, where the L2 holds 50;
# session 51, H100: larger tiles faster, the whole batch fastest,
# docs/CUDA.md).
# TRIAL_STEPS (default "tests memcheck tune ab ncu all tiles") picks the parts;
# "suite" (not in the default) runs the whole test_cuda_model with each
# chosen switch on, the last check before it becomes a default
# (TRIAL_SUITE_S, 240 s, bounds it);
# TRIAL_ONLY (switch names, space-separated) those switches;
# TRIAL_MEMCHECK_S (100) bounds each memcheck run, TRIAL_TEST_S (240) each
# test pattern's run (a push form whose byte counts were wrong would wait
# for ever; tests/test_push_plan.cu checks them on the host). A switch that
# wins (faster, same bytes) becomes a default in its own commit, its numbers
# in docs/CUDA-KERNELS.md. Exit 0 when every part ran and every test passed.
set -uo pipefail
build=${build:?set build to the build directory}
here=$(cd "$(dirname "$0")" && pwd)
steps=" ${TRIAL_STEPS:-tests memcheck tune ab ncu all tiles} "
rc=0
t0=$SECONDS
stamp() { echo "=== [$((SECONDS - t0)) s] $*"; }
want() { case $steps in *" $1 "*) return 0 ;; esac; return 1; }
# switch | its tests' name patterns (space-separated) | the batches it
# serves | the kernels' name pattern for ncu.
switches=(
  "HRMT_CUDA_FUSED_NORM|fused_norm_*|16,64,128,256|proj_norm|norm_|nvjet|xmma|gemm_kernel"
  "HRMT_CUDA_NORM_VEC|norm_vec_equals_reg_*|16,64,256|norm_"
  "HRMT_CUDA_ATTN_ROPE_ONCE|attn_rope_once_equals_twice_*|64,256|attend_mma"
  "HRMT_CUDA_GLU_MUL|glu_mul_equals_f32_product_*|1,8,64,256|ring_gemm_kernel"
  "HRMT_CUDA_GLU_WRES|glu_wres_* glu_shapes_equal_launches_*|16,64,256|ring_(gemm|wres)_kernel"
  "HRMT_CUDA_CLUSTER_NORM_PUSH|cluster_norm_push_equals_barriers_*|1,2,4,8|cluster_norm"
  "HRMT_CUDA_QKV_ATTN_PUSH|qkv_attn_push_equals_barrier_*|1,2|qkv_attn_kernel"
  "HRMT_CUDA_ROPE_EARLY|rope_early_equals_late_*|1,2,8|qkv_attn"
  "HRMT_CUDA_QKV_ATTN_BULK|qkv_attn_bulk_equals_push_*|1,2,8|qkv_attn"
  "HRMT_CUDA_CLUSTER_NORM_OWNER8|cluster_norm_owner8_equals_owner_*|1,4,8,11|cluster_norm"
  "HRMT_CUDA_ATTN_STREAM|attn_stream_equals_plain_*|40,128,256|attend_mma"
  "HRMT_CUDA_TILE_LINKS|tile_links_*|1,8,64,256|tile_|inject"
)
export HRMT_TEST_REQUIRE_CUDA=1
# One bounded run of test_cuda_model: run_cases LIMIT_S WHAT [VAR=VALUE...]
# TEST_BINARY ARGS..., its verdict lines printed; sets tc. A run in which no
# case ran fails (a filter that matches none passes vacuously).
run_cases() {
  local limit=$1 what=$2 log
  shift 2
  log=$(mktemp)
  timeout "$limit" env "$@" >"$log" 2>&1
  tc=$?
  grep -v 'Test is disabled' "$log" | grep -E '^\[(PASS|FAIL|SKIP|----)\]|Synthesis'
  [ "$tc" -eq 124 ] && echo "$what: stopped after $limit s (no verdict)"
  if grep -q 'Tested: 0 ' "$log"; then
    echo "$what: no case ran"
    tc=1
  fi
  rm -f "$log"
}
for s in "${switches[@]}"; do
  IFS='|' read -r var pats batches kern <<<"$s"
  case " ${TRIAL_ONLY:-$var} " in *" $var "*) ;; *) continue ;; esac
  if want tests; then
    for pat in $pats; do
      stamp "$var: tests cuda_model/$pat"
      run_cases "${TRIAL_TEST_S:-240}" "tests cuda_model/$pat" "$build/tests/test_cuda_model" \
        --jobs 4 --verbose --filter="cuda_model/$pat"
      [ "$tc" -eq 0 ] || rc=1
    done
  fi
  if want tune && [ "$var" = HRMT_CUDA_GLU_WRES ]; then
    stamp "$var=1: the tuner's gate_up times per shape (6 is W-resident), batch 256"
    HRMT_CUDA_GLU_WRES=1 HRMT_CUDA_GEMM_TUNE_LOG=1 "$build/hrmt" bench --backend cuda \
      --mode baseline --batch-sizes 256 --warmup 1 --iterations 3 2>&1 | grep -E 'gate_up|ms'
    [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
  fi
  if want memcheck && ! command -v compute-sanitizer >/dev/null; then
    echo "$var: memcheck SKIP (no compute-sanitizer on PATH)"
    rc=1
  elif want memcheck; then
    stamp "$var=1: memcheck, one step of each schedule at batches $batches"
    # A bound per run, so that one slow case cannot take the call's time.
    # Without the GEMM tuner's thousands of timing launches (as bench/gpu.sh's
    # sanitizer step).
    env "$var=1" HRMT_CUDA_GEMM_TUNE=0 timeout "${TRIAL_MEMCHECK_S:-100}" \
      compute-sanitizer --tool memcheck --error-exitcode 9 \
      "$build/hrmt" bench --backend cuda --mode compare --batch-sizes "$batches" --warmup 0 \
      --iterations 1 2>&1 | tail -3
    mc=${PIPESTATUS[0]}
    [ "$mc" -eq 124 ] && echo "memcheck: stopped after ${TRIAL_MEMCHECK_S:-100} s (no verdict)"
    [ "$mc" -eq 0 ] || rc=1
  fi
  if want suite; then
    stamp "$var=1: the whole test_cuda_model"
    run_cases "${TRIAL_SUITE_S:-240}" suite "$var=1" "$build/tests/test_cuda_model" --jobs 8 \
      --timeout 200
    [ "$tc" -eq 0 ] || rc=1
  fi
  if want ab; then
    stamp "$var: bench/ab.sh \"0 1\" $batches 2"
    # The tile links serve the tiered schedule only: its A/B times that.
    mode=baseline
    [ "$var" = HRMT_CUDA_TILE_LINKS ] && mode=tiered
    bash "$here/ab.sh" "$build" "$var" "0 1" "$batches" 2 -- --backend cuda --mode "$mode" \
      --warmup 300 --iterations 20 || rc=1
  fi
  if want ncu && ! command -v ncu >/dev/null; then
    echo "$var: ncu SKIP (no ncu on PATH)"
    rc=1
  elif want ncu; then
    for v in 0 1; do
      stamp "$var=$v: ncu -k regex:$kern, batch 256 (one step, caches as the step leaves them)"
      env "$var=$v" HRMT_CUDA_PROFILE_STEPS=1 ncu --cache-control none --clock-control none \
        --profile-from-start off --kernel-name-base demangled -k "regex:$kern" -c 4 \
        --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes.sum,lts__t_bytes.sum \
        "$build/hrmt" bench --backend cuda --mode baseline --batch-sizes 256 --warmup 0 \
        --iterations 1 2>&1 | grep -E '^  [^ ]|^    [a-z]+__' | cut -c1-160
      [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
    done
  fi
done
if want all; then
  # Every switch above on at once against none: the step if all became defaults.
  on=$(for s in "${switches[@]}"; do printf '%s=1,' "${s%%|*}"; done)
  stamp "all switches: bench/ab.sh ENV \"- ${on%,}\" 1,8,64,256 2"
  bash "$here/ab.sh" "$build" ENV "- ${on%,}" 1,8,64,256 2 || rc=1
fi
if want tiles; then
  stamp "tiered schedule, samples per tile: bench/ab.sh HRMT_CUDA_TILE_SAMPLES \"- 32 96 256\" 64,256 1"
  bash "$here/ab.sh" "$build" HRMT_CUDA_TILE_SAMPLES "- 32 96 256" 64,256 1 -- \
    --backend cuda --mode tiered --iterations 10 || rc=1
fi
stamp "done (rc $rc)"
exit $rc
