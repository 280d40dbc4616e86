#!/usr/bin/env bash
# session 39 call 5: HRMT_CUDA_GLU_WRES3 on by default: build, full device
# suite, A/B against =0, the step table (bench/gpu.sh with the torch
# anchors), then where the W-resident kernel's warps stall (ncu source page)
source .devdeps/env.sh
export PATH=$PATH:/usr/local/cuda/bin HRMT_CALIBRATE=0
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
t0=$(date +%s)
cmake -S . -B /tmp/bA -DCMAKE_BUILD_TYPE=Release -DHRMT_CUDA=ON -DHRMT_MPI=OFF >/tmp/cfg.log 2>&1 || { tail -20 /tmp/cfg.log; exit 1; }
cmake --build /tmp/bA -j16 --target hrmt hrmt_cli test_cuda_model >/tmp/build.log 2>&1 || { grep -E "error|Error" /tmp/build.log | head -30; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
echo "== full suite"
HRMT_TEST_REQUIRE_CUDA=1 timeout 200 /tmp/bA/tests/test_cuda_model --jobs 8 --timeout 180 > $OUT/suite.log 2>&1; echo "rc=$?"
grep -E "gpu/torch distance" $OUT/suite.log | awk '{print $NF}' | sort -g | sed -n '1p;$p' | tr '\n' ' '; echo
grep -E "Synthesis|FAIL|fail" $OUT/suite.log | tail -5
echo "== ab $(( $(date +%s) - t0 )) s"
timeout 200 bash bench/ab.sh /tmp/bA ENV "HRMT_CUDA_GLU_WRES3=0 -" 1,8,64,256 2 2>&1 | tail -14 | tee $OUT/ab.log
echo "== step table $(( $(date +%s) - t0 )) s"
HRMT_GPU_BUILD=/tmp/bA HRMT_GPU_BUDGET_S=200 HRMT_GPU_BENCH_EXTRA=0 HRMT_GPU_CMAKE_ARGS=-DHRMT_MPI=OFF HRMT_GPU_SKIP="ctest ops probe install cpu sanitizers" HRMT_GPU_TARGETS="hrmt hrmt_cli" bash bench/gpu.sh > $OUT/gpu_sh.log 2>&1
echo "gpu.sh rc=$? $(( $(date +%s) - t0 )) s"
tail -40 $OUT/gpu_sh.log
echo "== ncu source $(( $(date +%s) - t0 )) s"
HRMT_CUDA_PROFILE_STEPS=1 timeout 90 ncu --clock-control none --profile-from-start off -k 'regex:ring_wres' -s 1 -c 1 \
  --section SourceCounters --page source --print-source sass --csv \
  /tmp/bA/hrmt bench --backend cuda --mode baseline --batch-sizes 256 --warmup 0 --iterations 1 --quiet > $OUT/src.csv 2>$OUT/src.err
echo "ncu rc=$? $(wc -l < $OUT/src.csv) lines"; head -c 600 $OUT/src.err
python3 - $OUT/src.csv <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
hi = next((i for i, r in enumerate(rows) if any('Source' == c for c in r)), None)
if hi is None: print("no header"); print(rows[:3]); sys.exit()
h = rows[hi]; print("columns:", [c for c in h][:20])
src = h.index('Source')
cols = [i for i, c in enumerate(h) if 'Warp Stall Sampling (All' in c] or [i for i, c in enumerate(h) if 'Stall' in c]
c = cols[0]
by_op, by_ins, tot = collections.Counter(), [], 0
for r in rows[hi + 1:]:
    try: v = float(r[c].replace(',', ''))
    except (ValueError, IndexError): continue
    op = r[src].split()[0] if r[src].split() else '?'
    if op.startswith('@'): op = r[src].split()[1]
    by_op[op.split('.')[0]] += v; by_ins.append((v, r[src][:90])); tot += v
print("total samples", tot)
for op, v in by_op.most_common(14): print(f"{v / tot:6.1%} {op}")
for v, s in sorted(by_ins, reverse=True)[:14]: print(f"{v / tot:6.1%} {s}")
PY
echo "done $(( $(date +%s) - t0 )) s"
