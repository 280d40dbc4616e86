# Warning set used for every target we compile (library, CLI, tests, benches).
# -Wno-sign-conversion: in C, gcc's -Wconversion also turns on -Wsign-conversion, which fires on
# every int <-> size_t mix in index arithmetic (int loop counters against shape[]/stride[] and
# size_t n), pervasive in kernels; sizes are checked elsewhere instead: overflow-checked with
# core/checked.h and shape-validated once in the public wrappers, before any kernel runs.
set(HRMT_WARNING_FLAGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
if(HRMT_WERROR)
  list(APPEND HRMT_WARNING_FLAGS -Werror)
endif()
function(hrmt_target_warnings tgt)
  target_compile_options(${tgt} PRIVATE ${HRMT_WARNING_FLAGS})
endfunction()
