# Cross build for aarch64 (NEON) on a Debian 12 x86-64 host, tests run under
# qemu-user. Uses Debian multiarch: the :arm64 -dev packages live in
# /usr/lib/aarch64-linux-gnu and /usr/include/aarch64-linux-gnu next to the
# host's, so no separate sysroot is needed. .ci/neon.sh installs all of it.
#
# Criterion cannot be installed as libcriterion-dev:arm64 next to the host's
# (its libnanomsg5 dependency is not Multi-Arch: same), so .ci/neon.sh unpacks
# the arm64 Criterion into an overlay directory (HRMT_AARCH64_OVERLAY, default
# /opt/hrmt-aarch64) that pkg-config and the test runs are pointed at here.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian 12's aarch64 GCC 12.2 dies with an internal compiler error in the -O3
# loop vectorizer (vect_transform_reduction) on an fmax reduction loop
# (tests/test_engram.c's ulp_count); -O2 does not trigger it.
set(CMAKE_C_FLAGS_RELEASE "-O2 -DNDEBUG" CACHE STRING "Release flags (cross: -O2, see above)")

if(DEFINED ENV{HRMT_AARCH64_OVERLAY})
  set(HRMT_AARCH64_OVERLAY "$ENV{HRMT_AARCH64_OVERLAY}")
else()
  set(HRMT_AARCH64_OVERLAY /opt/hrmt-aarch64)
endif()
set(_hrmt_overlay_lib "${HRMT_AARCH64_OVERLAY}/usr/lib/aarch64-linux-gnu")

# Host programs (pkg-config, qemu) from the host; libraries, headers and CMake
# packages only for the target: multiarch paths first, then the overlay.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
list(APPEND CMAKE_PREFIX_PATH "${HRMT_AARCH64_OVERLAY}/usr")
list(APPEND CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu
     /usr/include/x86_64-linux-gnu)

# pkg-config must see only arm64 .pc files (plus arch-independent ones).
set(ENV{PKG_CONFIG_LIBDIR}
    "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig:${_hrmt_overlay_lib}/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# ctest runs every test binary through qemu. The arm64 glibc, libgomp and the
# -dev packages' libraries come from multiarch (/lib/aarch64-linux-gnu), so no
# -L prefix: the cross toolchain's /usr/aarch64-linux-gnu would pair its own
# ld.so with the multiarch libc.so.6. LD_LIBRARY_PATH (set inside the guest, so
# children that Criterion re-executes inherit it) adds the Criterion overlay.
find_program(HRMT_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR "${HRMT_QEMU_AARCH64};-E;LD_LIBRARY_PATH=${_hrmt_overlay_lib}")
