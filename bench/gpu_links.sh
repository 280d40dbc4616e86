#!/usr/bin/env bash
# Where a small batch's step goes, link by link, on the GPU machine (as
# bench/gpu.sh's hook: $build and $out set; or alone with build= and out=):
#  1. bench/cuda_link_latency.cu: what one link of a graph of dependent
#     kernels costs with nothing in it (plain, PDL, with 3 us of work), and
#     bench/cuda_chain_latency.cu: what a dependent k16 step of the F32
#     chain costs with wgmma and with mma.sync, and whether their bits agree;
#     bench/cuda_handoff_latency.cu: what getting the tile the kernel before
#     wrote costs (PDL wait or flags; TMA, LDG or cp.async);
#     bench/cuda_ring_feed.cu: how fast a TMA ring brings a small-batch
#     kernel's stages from L2 against the products they feed (CTAs, bytes,
#     ring depth, A multicast);
#  2. a second build with -DHRMT_CUDA_LINK_TRACE=ON (src/cuda/link_trace.cuh)
#     and each batch's step timeline from it (bench/link_trace.py), the
#     records in $out/trace_B.log (CSV), beside the plain build's step time.
# LINK_BATCHES (default "1 8 64 256") picks the batches.
#   HRMT_GPU_HOOK='bash bench/gpu_links.sh' bash bench/gpu.sh
# Exit 0 when every part ran.
set -uo pipefail
build=${build:?set build to the build directory}
out=${out:-/tmp}
root=$(cd "$(dirname "$0")/.." && pwd)
rc=0
t0=$SECONDS
stamp() { echo "=== [$((SECONDS - t0)) s] $*"; }
# One of the microbenchmarks, built for ARCH and run with a bound (a stuck
# one must not take the call).
micro() {
  local name=$1 arch=$2
  stamp "$name (bench/cuda_$name.cu)"
  if nvcc -std=c++17 -O3 -arch="$arch" -I "$root/include" -I "$root/src" \
    "$root/bench/cuda_$name.cu" -o "/tmp/$name"; then
    timeout -k 5 120 "/tmp/$name" || rc=1
  else
    rc=1
  fi
}
micro link_latency sm_90
micro chain_latency sm_90a
micro handoff_latency sm_90a
micro ring_feed sm_90a
tb=/tmp/hrmt-build-trace
stamp "link-trace build ($tb)"
if cmake -S "$root" -B "$tb" -DCMAKE_BUILD_TYPE=Release -DHRMT_CUDA=ON -DHRMT_MPI=OFF \
  -DHRMT_BUILD_TESTS=OFF -DHRMT_BUILD_BENCH=OFF -DHRMT_CUDA_LINK_TRACE=ON >"$out/trace_build.log" 2>&1 &&
  cmake --build "$tb" -j"$(nproc)" --target hrmt_cli >>"$out/trace_build.log" 2>&1; then
  for b in ${LINK_BATCHES:-1 8 64 256}; do
    stamp "batch $b: plain build's step, then the traced step"
    "$build/hrmt" bench --backend cuda --mode baseline --batch-sizes "$b" --warmup 3 \
      --iterations 20 2>&1 | grep -m1 '^baseline'
    HRMT_CUDA_LINK_TRACE_OUT="$out/trace_$b.log" "$tb/hrmt" bench --backend cuda --mode baseline \
      --batch-sizes "$b" --warmup 3 --iterations 5 2>&1 | grep -m1 '^baseline'
    python3 "$root/bench/link_trace.py" "$out/trace_$b.log" || rc=1
  done
else
  echo "trace build failed (trace_build.log)"
  tail -20 "$out/trace_build.log"
  rc=1
fi
stamp "done"
exit $rc
