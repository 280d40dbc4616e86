# Warning set used for every target we compile (library, CLI, tests, benches).
# -Wno-sign-conversion: in C, gcc's -Wconversion also turns on -Wsign-conversion, which fires on
# every implicit int <-> size_t mix in index arithmetic (int loop counters against size_t shapes,
# strides and counts), the bread and butter of kernels. Sizes are checked elsewhere instead:
# overflow-checked with core/checked.h and shape-validated in the public wrappers before any
# kernel runs, and .ci/lint.sh runs clang-tidy's bugprone-implicit-widening-of-multiplication-result
# and bugprone-narrowing-conversions over src/.
set(HRMT_WARNING_FLAGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
if(HRMT_WERROR)
  list(APPEND HRMT_WARNING_FLAGS -Werror)
endif()
function(hrmt_target_warnings tgt)
  target_compile_options(${tgt} PRIVATE ${HRMT_WARNING_FLAGS})
endfunction()
