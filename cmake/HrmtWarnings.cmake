# Warning set used for every target we compile (library, CLI, tests, benches).
set(HRMT_WARNING_FLAGS -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
if(HRMT_WERROR)
  list(APPEND HRMT_WARNING_FLAGS -Werror)
endif()
function(hrmt_target_warnings tgt)
  target_compile_options(${tgt} PRIVATE ${HRMT_WARNING_FLAGS})
endfunction()
