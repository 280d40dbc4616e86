#!/usr/bin/env bash
# Lint gate: formatting, cppcheck and clang-tidy. Exits non-zero when any step has a finding.
#
#   .ci/lint.sh [BUILD_DIR]        BUILD_DIR (default build-lint) receives a CMake configure whose
#                                  compile_commands.json drives clang-tidy (benches and tools on).
#
# Covers every C file of the project: format over include/ src/ tests/ bench/ tools/, cppcheck and
# clang-tidy over src/ bench/ tools/ (tests/ are checked by their own ASan/UBSan runs).
#   HRMT_LINT_STEPS="format cppcheck tidy"   the steps to run (default: all three)
#   HRMT_LINT_JOBS=N                         parallel analyser processes (default: nproc)
#   HRMT_LINT_ONLY=REGEX                     only files whose repo-relative path matches (grep -E),
#                                            for a quick local run; CI leaves it unset
#   CLANG_FORMAT / CLANG_TIDY / CPPCHECK     tool binaries (default: clang-format, clang-tidy, cppcheck)
#
# Tools are Debian 12's: apt-get install clang-format clang-tidy cppcheck libomp-14-dev
# (libomp-14-dev puts omp.h where clang-tidy looks for it; the compile database has -fopenmp).
set -u -o pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
BUILD_DIR=${1:-build-lint}
case $BUILD_DIR in /*) ;; *) BUILD_DIR="$ROOT/$BUILD_DIR" ;; esac
STEPS=${HRMT_LINT_STEPS:-format cppcheck tidy}
JOBS=${HRMT_LINT_JOBS:-$(nproc 2>/dev/null || echo 2)}
ONLY=${HRMT_LINT_ONLY:-}
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
CLANG_TIDY=${CLANG_TIDY:-clang-tidy}
CPPCHECK=${CPPCHECK:-cppcheck}

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILED=()
SUMMARY=()

say() { printf '%s\n' "$*"; }
run_shown() { say "+ $*"; "$@"; }
need_tool() {
  if ! command -v "$1" >/dev/null 2>&1; then
    say "lint: '$1' not found (Debian 12: apt-get install $2)"
    return 1
  fi
  say "  using $(command -v "$1"): $("$1" --version 2>/dev/null | grep -m1 .)"
}

# Source files under the given top-level folders: tracked files plus new, not-ignored ones, so a
# local run sees files that are not committed yet. tests/data holds fixtures, never code.
source_files() {
  if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$ROOT" ls-files --cached --others --exclude-standard -- "$@"
  else
    find "$@" -type f
  fi | grep -E "${SRC_EXT:-\.(c|h)\$}" | grep -v '^tests/data/' | grep -E -- "${ONLY:-.}" | sort -u |
    while IFS= read -r f; do
      [ -f "$f" ] && printf '%s\n' "$f"
    done
}

# ---------------------------------------------------------------------------------------------
step_format() {
  say "== format: $CLANG_FORMAT --dry-run --Werror (style from .clang-format)"
  need_tool "$CLANG_FORMAT" clang-format || return 1
  [ -f .clang-format ] || { say "lint: .clang-format is missing"; return 1; }
  local -a files
  # The CUDA sources too (the other steps read C only).
  mapfile -t files < <(SRC_EXT='\.(c|h|cu|cuh)$' source_files include src tests bench tools)
  say "  ${#files[@]} files (C and CUDA) under include/ src/ tests/ bench/ tools/"
  [ ${#files[@]} -gt 0 ] || return 0
  say "+ $CLANG_FORMAT --style=file --dry-run --Werror <files>"
  "$CLANG_FORMAT" --style=file --dry-run --Werror "${files[@]}" >"$TMP/format.log" 2>&1
  local rc=$?
  local n
  n=$(grep -c -- '-Wclang-format-violations' "$TMP/format.log")
  if [ "$rc" -ne 0 ] || [ "$n" -gt 0 ]; then
    # Each place comes with its source line; the first 300 lines show the kind of change.
    head -n 300 "$TMP/format.log"
    local total
    total=$(wc -l <"$TMP/format.log")
    [ "$total" -le 300 ] ||
      say "  ... $((total - 300)) more lines (see them with: $CLANG_FORMAT --dry-run FILE)"
    local bad
    bad=$(grep -- '-Wclang-format-violations' "$TMP/format.log" | cut -d: -f1 | sort -u)
    say "format: $n unformatted places in $(printf '%s\n' "$bad" | grep -c .) files:"
    printf '  %s\n' $bad
    say "  fix with: $CLANG_FORMAT -i FILE..."
    SUMMARY+=("format: $n findings")
    return 1
  fi
  SUMMARY+=("format: 0 findings")
}

# ---------------------------------------------------------------------------------------------
step_cppcheck() {
  say "== cppcheck over src/ bench/ tools/"
  need_tool "$CPPCHECK" cppcheck || return 1
  local -a files
  mapfile -t files < <(source_files src bench tools | grep -E '\.c$')
  say "  ${#files[@]} .c files under src/ bench/ tools/"
  [ ${#files[@]} -gt 0 ] || return 0
  # One configuration: the ISAs this architecture builds (cppcheck does not run the compiler,
  # so the macros -m flags would define are given here; HRMT_HAVE_CUDA stays undefined).
  local defs=(-DHRMT_HAVE_SCALAR=1 -D__GNUC__=12)
  case $(uname -m) in
  x86_64 | amd64)
    defs+=(-D__x86_64__=1 -DHRMT_HAVE_AVX2=1 -DHRMT_HAVE_AVX512=1 -D__AVX2__=1 -D__FMA__=1
      -D__F16C__=1 -D__AVX512F__=1 -D__AVX512BW__=1 -D__AVX512DQ__=1 -D__AVX512VL__=1
      -D__AVX512BF16__=1) ;;
  aarch64 | arm64) defs+=(-D__aarch64__=1 -DHRMT_HAVE_NEON=1 -D__ARM_NEON=1) ;;
  esac
  printf '%s\n' "${files[@]}" >"$TMP/cppcheck.files"
  run_shown "$CPPCHECK" --error-exitcode=1 --enable=warning,performance,portability \
    --inline-suppr --suppressions-list=.ci/cppcheck-suppressions.txt \
    --std=c11 --language=c --platform=native --library=posix \
    -I include -I src "${defs[@]}" -j "$JOBS" --quiet \
    --template='{file}:{line}:{column}: {severity}: {message} [{id}]' \
    --file-list="$TMP/cppcheck.files" >"$TMP/cppcheck.log" 2>&1
  local rc=$?
  cat "$TMP/cppcheck.log"
  local n
  n=$(grep -cE '^[^ ]+:[0-9]+:[0-9]+: [a-z]+: .*\[[A-Za-z0-9_]+\]$' "$TMP/cppcheck.log")
  SUMMARY+=("cppcheck: $n findings")
  if [ "$rc" -ne 0 ] || [ "$n" -gt 0 ]; then
    say "cppcheck: $n findings (exit $rc)"
    return 1
  fi
}

# ---------------------------------------------------------------------------------------------
step_tidy() {
  say "== clang-tidy over src/ bench/ tools/ (compile database from $BUILD_DIR)"
  need_tool "$CLANG_TIDY" clang-tidy || return 1
  command -v python3 >/dev/null || { say "lint: python3 is needed to read compile_commands.json"; return 1; }
  # Benches and tools must be in the database; a fresh lint build needs no tests or CUDA
  # (CUDA sources are nvcc's; a C file built only with CUDA is analysed with fallback flags).
  local cmake_args=(-S "$ROOT" -B "$BUILD_DIR" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
    -DHRMT_BUILD_BENCH=ON -DHRMT_BUILD_TOOLS=ON)
  [ -f "$BUILD_DIR/CMakeCache.txt" ] || cmake_args+=(-DHRMT_CUDA=OFF -DHRMT_BUILD_TESTS=OFF)
  say "+ cmake ${cmake_args[*]}"
  if ! cmake "${cmake_args[@]}" >"$TMP/cmake.log" 2>&1; then
    tail -n 30 "$TMP/cmake.log"
    say "clang-tidy: the CMake configure failed"
    SUMMARY+=("clang-tidy: configure failed")
    return 1
  fi
  local db="$BUILD_DIR/compile_commands.json"
  [ -f "$db" ] || { say "clang-tidy: $db was not written"; return 1; }
  local -a files
  mapfile -t files < <(python3 - "$db" "$ROOT/" "${ONLY:-.}" <<'EOF'
import json, os, re, sys
db, root, only = sys.argv[1], sys.argv[2], re.compile(sys.argv[3])
seen = set()
for e in json.load(open(db)):
  f = os.path.normpath(os.path.join(e.get("directory", ""), e["file"]))
  rel = f[len(root):]
  if (f.startswith(root) and rel.split("/")[0] in ("src", "bench", "tools") and f.endswith(".c")
      and f not in seen and only.search(rel)):
    seen.add(f)
    print(f)
EOF
  )
  say "  ${#files[@]} .c files under src/ bench/ tools/ in the compile database"
  # Not in the database: src/ files of another ISA are skipped (their flags would not apply);
  # bench/ and tools/ files that this build does not compile (the CUDA bench; bench/gpu_app.c,
  # which bench/gpu.sh builds against the installed library) get the project's C flags.
  local -a fallback=()
  local f
  while IFS= read -r f; do
    printf '%s\n' "${files[@]}" | grep -qxF "$ROOT/$f" && continue
    case $f in
    src/*) say "  not in this build's compile database (another ISA/CUDA?), skipped: $f" ;;
    *) fallback+=("$ROOT/$f") ;;
    esac
  done < <(source_files src bench tools | grep -E '\.c$')
  [ ${#fallback[@]} -eq 0 ] || say "  ${#fallback[@]} more with the project's flags: ${fallback[*]#"$ROOT/"}"
  [ $((${#files[@]} + ${#fallback[@]})) -gt 0 ] || return 0
  # gcc-only warning options in the database must not stop clang.
  local tidy=("$CLANG_TIDY" -p "$BUILD_DIR" --quiet --extra-arg=-Wno-unknown-warning-option
    --extra-arg=-Wno-unused-command-line-argument)
  say "+ ${tidy[*]} <file>   (x${#files[@]}, $JOBS in parallel)"
  mkdir -p "$TMP/tidy"
  export TIDY_OUT="$TMP/tidy"
  [ ${#files[@]} -eq 0 ] || printf '%s\0' "${files[@]}" | xargs -0 -P "$JOBS" -I{} sh -c '
    log="$TIDY_OUT/$(printf "%s" "$1" | tr "/" "_").log"
    shift; "$@" > "$log" 2>&1; echo $? > "$log.rc"' _ {} "${tidy[@]}" {}
  # The flags of cmake/HrmtWarnings.cmake, C11, the project's include paths.
  local flags=(-std=c11 -I "$ROOT/include" -I "$ROOT/src" -Wall -Wextra -Wpedantic -Wshadow
    -Wconversion -Wno-sign-conversion)
  [ ${#fallback[@]} -eq 0 ] || printf '%s\0' "${fallback[@]}" | xargs -0 -P "$JOBS" -I{} sh -c '
    log="$TIDY_OUT/$(printf "%s" "$1" | tr "/" "_").log"
    shift; "$@" > "$log" 2>&1; echo $? > "$log.rc"' _ {} "$CLANG_TIDY" --quiet {} -- "${flags[@]}"
  local rc=0 log
  for log in "$TMP"/tidy/*.log; do
    [ "$(cat "$log.rc")" = 0 ] || rc=1
    # Drop clang's "N warnings generated" chatter; keep findings with their code excerpts.
    grep -vE '^[0-9]+ (warnings?|errors?)( and [0-9]+ (warnings?|errors?))? generated\.$' \
      "$log" >>"$TMP/tidy.all"
  done
  # A finding in a header shows up once per file that includes it: count it once.
  grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error): .*\]$' "$TMP/tidy.all" | sort -u >"$TMP/tidy.uniq"
  local n
  n=$(grep -c . "$TMP/tidy.uniq")
  SUMMARY+=("clang-tidy: $n findings")
  if [ "$rc" -ne 0 ] || [ "$n" -gt 0 ]; then
    cat "$TMP/tidy.all"
    say "clang-tidy: $n distinct findings; by check:"
    sed -E 's/.*\[([^],]+)[],].*$/\1/' "$TMP/tidy.uniq" | sort | uniq -c | sort -rn
    grep -q "'omp.h' file not found" "$TMP/tidy.all" &&
      say "  hint: clang-tidy needs clang's omp.h: apt-get install libomp-14-dev"
    return 1
  fi
}

for s in $STEPS; do
  case $s in
  format) step_format || FAILED+=(format) ;;
  cppcheck) step_cppcheck || FAILED+=(cppcheck) ;;
  tidy) step_tidy || FAILED+=(clang-tidy) ;;
  *) say "lint: unknown step '$s' (format, cppcheck, tidy)"; FAILED+=("$s") ;;
  esac
done
say "== lint summary: ${SUMMARY[*]:-nothing ran}"
if [ ${#FAILED[@]} -gt 0 ]; then
  say "lint: FAILED (${FAILED[*]})"
  exit 1
fi
say "lint: OK"
