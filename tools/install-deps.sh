#!/usr/bin/env bash
# Installs the Debian 12 packages hrmt needs to build, test and benchmark.
# Idempotent: skips apt-get when everything is already installed. Run as root.
set -euo pipefail
if [ "${1:-}" = --help ] || [ "${1:-}" = -h ]; then
  echo "usage: tools/install-deps.sh   (root; apt-get only when something is missing)"
  echo "Installs the Debian 12 packages to build, test and benchmark hrmt; HRMT_LINT=1 adds"
  echo "clang-format, clang-tidy and cppcheck, HRMT_PLOT=1 gnuplot; Open MPI (for hrmt-mpi) is"
  echo "optional and tried unless HRMT_MPI=0."
  exit 0
fi

pkgs=(build-essential cmake pkg-config git python3
      libsleef-dev libhwloc-dev libcriterion-dev libcjson-dev libomp-dev
      libopenblas-dev)
if [ "${HRMT_LINT:-0}" = 1 ]; then
  pkgs+=(clang-format clang-tidy cppcheck)
fi
if [ "${HRMT_PLOT:-0}" = 1 ]; then
  pkgs+=(gnuplot-nox)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: need root to apt-get install: ${missing[*]}" >&2
    exit 1
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Open MPI for hrmt-mpi (docs/MPI.md; cmake's HRMT_MPI=AUTO builds it when
# found). Optional: without it the build has no hrmt-mpi and its tests, so a
# failure here warns instead of failing the setup. HRMT_MPI=0 (or OFF) skips it.
if [[ ! "${HRMT_MPI:-1}" =~ ^(0|OFF|off)$ ]]; then
  mpi_missing=()
  for p in libopenmpi-dev openmpi-bin; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || mpi_missing+=("$p")
  done
  if [ ${#mpi_missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
      echo "install-deps: not root, skipping optional ${mpi_missing[*]} (no hrmt-mpi)" >&2
    elif ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
             apt-get install -y -qq --no-install-recommends "${mpi_missing[@]}" >/dev/null; }; then
      echo "install-deps: could not install optional ${mpi_missing[*]} (no hrmt-mpi)" >&2
    fi
  fi
fi
