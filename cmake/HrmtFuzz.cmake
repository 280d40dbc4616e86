# -DHRMT_FUZZ=ON: the libFuzzer targets of tests/fuzz/ (docs/FUZZING.md).
# Everything is compiled with coverage for libFuzzer plus ASan and UBSan, so a
# bug anywhere under a harness (library, CLI readers) stops the fuzzer; only
# the fuzz_* executables link libFuzzer's main (-fsanitize=fuzzer).
if(NOT HRMT_FUZZ)
  return()
endif()
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR
    "HRMT_FUZZ=ON needs clang, whose libFuzzer the fuzz targets link; this build uses "
    "${CMAKE_C_COMPILER_ID} (${CMAKE_C_COMPILER}). Configure a separate build directory with "
    "-DCMAKE_C_COMPILER=clang (Debian 12: apt-get install clang libclang-rt-14-dev), "
    "or run tools/fuzz.sh, which does.")
endif()
include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer,address,undefined")
check_c_source_compiles("
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }"
  HRMT_HAVE_LIBFUZZER)
unset(CMAKE_REQUIRED_FLAGS)
if(NOT HRMT_HAVE_LIBFUZZER)
  message(FATAL_ERROR
    "HRMT_FUZZ=ON: ${CMAKE_C_COMPILER} cannot link -fsanitize=fuzzer,address,undefined "
    "(Debian 12: apt-get install libclang-rt-14-dev)")
endif()
add_compile_options($<$<COMPILE_LANGUAGE:C>:-fsanitize=fuzzer-no-link,address,undefined>
                    $<$<COMPILE_LANGUAGE:C>:-fno-sanitize-recover=undefined>
                    $<$<COMPILE_LANGUAGE:C>:-fno-omit-frame-pointer>
                    $<$<COMPILE_LANGUAGE:C>:-g>)
add_link_options(-fsanitize=address,undefined)
