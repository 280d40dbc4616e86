#!/usr/bin/env bash
# aarch64 (NEON) cross build of hrmt, tested under qemu-user: installs the
# cross compiler, qemu and the arm64 libraries (Debian multiarch), configures
# build-neon with cmake/toolchains/aarch64-linux-gnu.cmake, builds, and runs
# ctest (ISAs scalar and neon). Idempotent: apt-get only runs when something
# is missing. Needs root for the installs. Extra args go to ctest.
#   HRMT_NEON_BUILD_DIR   build directory (default <repo>/build-neon)
#   HRMT_AARCH64_OVERLAY  where the arm64 Criterion is unpacked (/opt/hrmt-aarch64)
#   HRMT_NEON_CMAKE_ARGS  extra cmake arguments (default -DHRMT_WERROR=ON)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${HRMT_NEON_BUILD_DIR:-$root/build-neon}
overlay=${HRMT_AARCH64_OVERLAY:-/opt/hrmt-aarch64}
export HRMT_AARCH64_OVERLAY=$overlay
export DEBIAN_FRONTEND=noninteractive
t0=$(date +%s)
stamp() { echo "--- neon [$(( $(date +%s) - t0 ))s] $*"; }
need_root() {
  if [ "$(id -u)" != 0 ]; then
    echo "neon.sh: need root to $*" >&2
    exit 1
  fi
}

# Host tools, and arm64 libraries that are Multi-Arch: same (co-installable
# with the host's). libgomp1/libc6 arm64 are what the test binaries load under
# qemu; libgit2-1.5 and libffi8 are the runtime dependencies of Criterion.
host_pkgs=(build-essential cmake pkg-config gcc-aarch64-linux-gnu qemu-user)
arm64_pkgs=(libc6-dev:arm64 libgomp1:arm64 libsleef-dev:arm64 libhwloc-dev:arm64
            libcjson-dev:arm64 libgit2-1.5:arm64 libffi8:arm64)
# Not co-installable (libnanomsg5 is not Multi-Arch: same): unpacked into $overlay.
overlay_debs=(libcriterion3:arm64 libcriterion-dev:arm64 libnanomsg5:arm64)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

stamp "dependencies"
apt_updated=0
apt_update() {
  if [ $apt_updated = 0 ]; then
    apt-get update -qq
    apt_updated=1
  fi
}
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  need_root "add the arm64 architecture"
  dpkg --add-architecture arm64
  apt_update
fi
missing=()
for p in "${host_pkgs[@]}" "${arm64_pkgs[@]}"; do
  installed "$p" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  need_root "apt-get install ${missing[*]}"
  echo "neon.sh: installing ${missing[*]}"
  apt_update
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

want_ver=$(apt-cache policy libcriterion3:arm64 | awk '/Candidate:/ {print $2}')
if [ -z "$want_ver" ] || [ "$want_ver" = "(none)" ]; then
  apt_update
  want_ver=$(apt-cache policy libcriterion3:arm64 | awk '/Candidate:/ {print $2}')
fi
if [ "$(cat "$overlay/.hrmt-criterion-version" 2>/dev/null)" != "$want_ver" ]; then
  need_root "unpack the arm64 Criterion into $overlay"
  tmp=$(mktemp -d)
  (cd "$tmp" && chown _apt "$tmp" 2>/dev/null; apt-get download -qq "${overlay_debs[@]}")
  rm -rf "$overlay"
  mkdir -p "$overlay"
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$overlay"; done
  rm -rf "$tmp"
  # The .pc file names /usr: point it at the overlay. Its private requirements
  # (boxfort, nanomsg, ... -dev) only matter to static links, which we skip.
  sed -i -e "s|^prefix=/usr$|prefix=$overlay/usr|" -e '/^Requires.private:/d' \
    -e '/^Libs.private:/d' "$overlay/usr/lib/aarch64-linux-gnu/pkgconfig/criterion.pc"
  echo "$want_ver" > "$overlay/.hrmt-criterion-version"
fi

# Criterion runs each test in a child it re-executes from the binary, so the
# kernel itself must know to hand aarch64 ELF files to qemu (binfmt_misc); the
# ctest emulator only covers the first process.
binfmt=/proc/sys/fs/binfmt_misc
can_run=1
if [ ! -e "$binfmt/qemu-aarch64" ]; then
  need_root "register qemu-aarch64 with binfmt_misc"
  if [ ! -e "$binfmt/register" ]; then
    mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null || true
  fi
  # ELF64 little-endian, e_machine 183 (EM_AARCH64); qemu's own magic/mask.
  # F: the kernel opens qemu now, so it also works inside other mount namespaces.
  printf '%s' ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64:F' \
    > "$binfmt/register" 2>/dev/null || true
  if [ ! -e "$binfmt/qemu-aarch64" ]; then
    # A container without the right to register binfmt handlers cannot run
    # Criterion's re-executed children; the cross build is still checked.
    echo "neon.sh: WARNING: cannot register qemu-aarch64 with binfmt_misc here;" \
         "building only, NOT running the aarch64 tests" >&2
    can_run=0
  fi
fi

stamp "configure $build"
# shellcheck disable=SC2086
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
  -DHRMT_CUDA=OFF -DHRMT_BUILD_BENCH=OFF ${HRMT_NEON_CMAKE_ARGS:--DHRMT_WERROR=ON} >/dev/null
stamp "build"
cmake --build "$build" -j"$(nproc)"
[ "$can_run" = 1 ] || { stamp "done (build only)"; exit 0; }
stamp "ctest under qemu-aarch64"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
stamp "done"
