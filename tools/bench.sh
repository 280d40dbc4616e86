#!/usr/bin/env bash
# Installs what is needed, builds hrmt (Release) and runs the main job: the
# tiered-vs-baseline benchmark on the built-in default model (the official
# Sudoku config). Extra args go to `hrmt bench` (see `hrmt bench --help`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/tools/install-deps.sh"
build=${HRMT_BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$(nproc)" --target hrmt_cli
"$build/hrmt" info
exec "$build/hrmt" bench "$@"
