#!/usr/bin/env bash
# session 39 call 3: where the W-resident gate_up's time goes at batch 256:
# ncu sections (speed of light, pipes, warp states, scheduler) of one
# ring_wres launch and of the cuBLASLt qkv launch beside it, with the SM clock
source .devdeps/env.sh
export PATH=$PATH:/usr/local/cuda/bin HRMT_CALIBRATE=0
t0=$(date +%s)
if [ ! -x /tmp/bA/hrmt ]; then
cmake -S . -B /tmp/bA -DCMAKE_BUILD_TYPE=Release -DHRMT_CUDA=ON -DHRMT_MPI=OFF >/tmp/cfg.log 2>&1 || { tail -20 /tmp/cfg.log; exit 1; }
cmake --build /tmp/bA -j16 --target hrmt hrmt_cli >/tmp/build.log 2>&1 || { grep -E "error" /tmp/build.log | head -30; exit 1; }
fi
echo "build $(( $(date +%s) - t0 )) s"
ncu --query-metrics 2>/dev/null | awk '{print $1}' | grep -E "pipe_tensor|gmma|pipe_shared|cycles_elapsed$" > $OUT/metric_names.txt
for k in ring_wres nvjet; do
echo "== ncu $k $(( $(date +%s) - t0 )) s"
HRMT_CUDA_PROFILE_STEPS=1 timeout 120 ncu --clock-control none --profile-from-start off \
  -k "regex:$k" -s 2 -c 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section Occupancy \
  --metrics 'sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active,sm__pipe_tensor_cycles_active_realtime.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__cycles_elapsed.avg.per_second,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma.sum,sm__inst_executed.sum' \
  /tmp/bA/hrmt bench --backend cuda --mode baseline --batch-sizes 256 --warmup 0 --iterations 1 --quiet > $OUT/ncu_$k.log 2>&1
grep -v -E "^==|^ *$|----" $OUT/ncu_$k.log | sed -n '/void\|nvjet/,$p' | head -120
done
echo "done $(( $(date +%s) - t0 )) s"
