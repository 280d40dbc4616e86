#!/usr/bin/env bash
# Installs what is needed, builds hrmt (Release) and runs the main job: the
# tiered-vs-baseline benchmark on the built-in default model (the official
# Sudoku config). Extra args go to `hrmt bench` (see `hrmt bench --help`).
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  echo "usage: tools/bench.sh [hrmt bench options]   (root on a fresh Debian 12: installs packages)"
  echo "Builds build/ (Release; HRMT_BUILD_DIR overrides) and runs hrmt info, then hrmt bench with"
  echo "these options (build/hrmt bench --help lists them)."
  exit 0
fi
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/tools/install-deps.sh"
build=${HRMT_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target hrmt_cli
"$build/hrmt" info
exec "$build/hrmt" bench "$@"
