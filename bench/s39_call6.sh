#!/usr/bin/env bash
# session 39 call 6: the three-warpgroup W-resident gate_up with two product
# groups in flight (HRMT_CUDA_GLU_WRES_DEEP=1): tests, ncu, A/B
source .devdeps/env.sh
export PATH=$PATH:/usr/local/cuda/bin HRMT_CALIBRATE=0
t0=$(date +%s)
cmake -S . -B /tmp/bA -DCMAKE_BUILD_TYPE=Release -DHRMT_CUDA=ON -DHRMT_MPI=OFF >/tmp/cfg.log 2>&1 || { tail -20 /tmp/cfg.log; exit 1; }
cmake --build /tmp/bA -j16 --target hrmt hrmt_cli test_cuda_model >/tmp/build.log 2>&1 || { grep -E "error|Error" /tmp/build.log | head -30; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
echo "== tests DEEP=1"
HRMT_CUDA_GLU_WRES_DEEP=1 HRMT_TEST_REQUIRE_CUDA=1 timeout 60 /tmp/bA/tests/test_cuda_model --filter 'cuda_model/glu_wres_equals*' --timeout 50 2>&1 | tail -2
HRMT_CUDA_GLU_WRES_DEEP=1 HRMT_TEST_REQUIRE_CUDA=1 timeout 60 /tmp/bA/tests/test_cuda_model --filter 'cuda_model/glu_shapes_equal_launches_short_seq' --timeout 50 2>&1 | tail -1
for v in 0 1; do
echo "== ncu DEEP=$v $(( $(date +%s) - t0 )) s"
HRMT_CUDA_GLU_WRES_DEEP=$v HRMT_CUDA_GLU_SHAPE=6 HRMT_CUDA_PROFILE_STEPS=1 timeout 40 ncu --clock-control none --profile-from-start off \
  -k 'regex:ring_wres' -s 1 -c 1 \
  --metrics 'gpu__time_duration.sum,sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second' \
  /tmp/bA/hrmt bench --backend cuda --mode baseline --batch-sizes 256 --warmup 0 --iterations 1 --quiet 2>&1 \
  | grep -v "^==PROF==" | grep -E '^ +[a-z]|void' | cut -c1-110
done
echo "== ab $(( $(date +%s) - t0 )) s"
timeout 90 bash bench/ab.sh /tmp/bA ENV "- HRMT_CUDA_GLU_WRES_DEEP=1" 64,256 2 2>&1 | tail -4
echo "done $(( $(date +%s) - t0 )) s"
