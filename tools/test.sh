#!/usr/bin/env bash
# Installs what is needed, builds hrmt (Release) in build/ and runs the whole
# test suite (every test once per ISA this CPU has). Extra args go to ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/tools/install-deps.sh"
build=${HRMT_BUILD_DIR:-$root/build}
# The CUDA backend is compiled whenever nvcc exists (on PATH or in /usr/local/cuda),
# GPU or not, so CUDA code that does not compile fails the tests; its tests
# skip without a device. HRMT_CMAKE_ARGS may still say -DHRMT_CUDA=OFF.
cuda=""
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then cuda="-DHRMT_CUDA=ON"; fi
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release $cuda ${HRMT_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j"$(nproc)"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
