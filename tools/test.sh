#!/usr/bin/env bash
# Installs what is needed, builds hrmt (Release) in build/ and runs the whole
# test suite (every test once per ISA this CPU has). Extra args go to ctest.
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  echo "usage: tools/test.sh [ctest options]   (root on a fresh Debian 12: installs packages)"
  echo "Builds build/ (Release; HRMT_BUILD_DIR overrides, HRMT_CMAKE_ARGS adds cmake arguments)"
  echo "and runs every test once per ISA this CPU has, passing these options to ctest."
  exit 0
fi
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
