#!/usr/bin/env bash
# session 39 call 4: the W-resident gate_up over three consumer warpgroups
# (HRMT_CUDA_GLU_WRES3): tests under timeouts, memcheck, ncu at 256, A/B
source .devdeps/env.sh
export PATH=$PATH:/usr/local/cuda/bin HRMT_CALIBRATE=0
t0=$(date +%s)
cmake -S . -B /tmp/bA -DCMAKE_BUILD_TYPE=Release -DHRMT_CUDA=ON -DHRMT_MPI=OFF >/tmp/cfg.log 2>&1 || { tail -20 /tmp/cfg.log; exit 1; }
cmake --build /tmp/bA -j16 --target hrmt hrmt_cli test_cuda_model >/tmp/build.log 2>&1 || { grep -E "error|Error" /tmp/build.log | head -30; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
export HRMT_TEST_REQUIRE_CUDA=1
echo "== glu_wres tests"
timeout 150 /tmp/bA/tests/test_cuda_model --filter 'cuda_model/glu_wres*' --jobs 3 --timeout 120 2>&1 | tail -6; echo "rc=${PIPESTATUS[0]}"
echo "== ncu 256 ring_wres WRES3 $(( $(date +%s) - t0 )) s"
for v in 0 1; do
HRMT_CUDA_GLU_WRES3=$v HRMT_CUDA_GLU_SHAPE=6 HRMT_CUDA_PROFILE_STEPS=1 timeout 90 ncu --clock-control none --profile-from-start off \
  -k 'regex:ring_wres' -s 1 -c 1 \
  --metrics 'gpu__time_duration.sum,lts__t_bytes.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,sm__inst_executed.sum,launch__grid_size,launch__block_size,launch__registers_per_thread' \
  /tmp/bA/hrmt bench --backend cuda --mode baseline --batch-sizes 256 --warmup 0 --iterations 1 --quiet 2>&1 \
  | grep -v "^==PROF==" | grep -E '^ +[a-z]|void' | cut -c1-110
done
echo "== ab $(( $(date +%s) - t0 )) s"
timeout 240 bash bench/ab.sh /tmp/bA ENV "- HRMT_CUDA_GLU_WRES3=1" 8,64,256 3 2>&1 | tail -14 | tee $OUT/ab.log
echo "== ab forced 6 at 256 $(( $(date +%s) - t0 )) s"
timeout 120 bash bench/ab.sh /tmp/bA ENV "HRMT_CUDA_GLU_SHAPE=6 HRMT_CUDA_GLU_SHAPE=6,HRMT_CUDA_GLU_WRES3=1" 256 3 2>&1 | tail -6 | tee -a $OUT/ab.log
echo "== memcheck $(( $(date +%s) - t0 )) s"
timeout 150 compute-sanitizer --tool memcheck --leak-check full /tmp/bA/tests/test_cuda_model --filter 'cuda_model/glu_wres3_equals_launches' 2>&1 | grep -E "Tested|ERROR SUMMARY|LEAK SUMMARY" | head -5
echo "done $(( $(date +%s) - t0 )) s"
