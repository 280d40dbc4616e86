#!/usr/bin/env bash
# session 39 call 1: build, the A-sharing cluster shapes (GLU 13/14) under
# timeouts, memcheck, full device suite, tuner log, A/B, ncu, L2 probe
source .devdeps/env.sh
export PATH=$PATH:/usr/local/cuda/bin HRMT_CALIBRATE=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
t0=$(date +%s)
cmake -S . -B /tmp/bA -DCMAKE_BUILD_TYPE=Release -DHRMT_CUDA=ON -DHRMT_MPI=OFF >/tmp/cfg.log 2>&1 || { tail -20 /tmp/cfg.log; exit 1; }
cmake --build /tmp/bA -j16 --target hrmt hrmt_cli test_cuda_model >/tmp/build.log 2>&1 || { grep -E "error|Error" /tmp/build.log | head -30; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
export HRMT_TEST_REQUIRE_CUDA=1
echo "== glu_mc tests"
timeout 150 /tmp/bA/tests/test_cuda_model --filter 'cuda_model/glu_mc*' --timeout 120 --verbose 2>&1 | tail -15; echo "rc=${PIPESTATUS[0]}"
echo "== memcheck $(( $(date +%s) - t0 )) s"
timeout 120 compute-sanitizer --tool memcheck --leak-check full /tmp/bA/tests/test_cuda_model --filter 'cuda_model/glu_mc_shapes_equal_launches_short_seq' 2>&1 | grep -E "Tested|ERROR SUMMARY|LEAK SUMMARY|Invalid|rror" | head -12
echo "== full suite $(( $(date +%s) - t0 )) s"
timeout 200 /tmp/bA/tests/test_cuda_model --jobs 8 --timeout 180 2>&1 | tail -6; echo "rc=${PIPESTATUS[0]}"
echo "== tune log GLU_MC=1 $(( $(date +%s) - t0 )) s"
HRMT_CUDA_GLU_MC=1 HRMT_CUDA_GEMM_TUNE_LOG=1 timeout 120 /tmp/bA/hrmt bench --backend cuda --mode baseline --batch-sizes 64,256 --iterations 5 --quiet 2>&1 | grep -i -E "glu|gate" | head -40
echo "== ab $(( $(date +%s) - t0 )) s"
timeout 240 bash bench/ab.sh /tmp/bA ENV "- HRMT_CUDA_GLU_SHAPE=6 HRMT_CUDA_GLU_MC=1,HRMT_CUDA_GLU_SHAPE=13 HRMT_CUDA_GLU_MC=1,HRMT_CUDA_GLU_SHAPE=14" 64,256 3 2>&1 | tail -12
for sh in 6 13 14; do
echo "== ncu 256 ring_wres shape $sh $(( $(date +%s) - t0 )) s"
HRMT_CUDA_GLU_MC=1 HRMT_CUDA_GLU_SHAPE=$sh HRMT_CUDA_PROFILE_STEPS=1 timeout 90 ncu --clock-control none --profile-from-start off \
  -k 'regex:ring_wres' -c 3 \
  --metrics 'gpu__time_duration.sum,lts__t_bytes.sum,dram__bytes.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__cluster_dim_x,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio' \
  /tmp/bA/hrmt bench --backend cuda --mode baseline --batch-sizes 256 --warmup 0 --iterations 1 --quiet 2>&1 \
  | grep -v "^==PROF==" | grep -E '^ +[a-z]|void' | cut -c1-120 | head -40
done
echo "== probe $(( $(date +%s) - t0 )) s"
timeout 60 /tmp/bA/hrmt probe --backend cuda --quick 2>&1 | tail -25
echo "done $(( $(date +%s) - t0 )) s"
