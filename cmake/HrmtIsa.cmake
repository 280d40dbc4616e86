# Which ISA kernel files this target gets, and the flags each is compiled with.
# Kernel files in src/cpu/ are named <what>_<isa>.c; the suffix picks the flags.
# Nothing else in the library is built with ISA flags (no -march=native).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(HRMT_ARCH_X86 ON)
  set(HRMT_ISAS scalar avx2 avx512 amx)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(HRMT_ARCH_ARM64 ON)
  set(HRMT_ISAS scalar neon)
else()
  set(HRMT_ISAS scalar)
endif()

# The scalar reference keeps the reference rounding order: no FMA contraction.
set(HRMT_ISA_FLAGS_scalar -ffp-contract=off)
set(HRMT_ISA_FLAGS_avx2 -mavx2 -mfma -mf16c)
set(HRMT_ISA_FLAGS_avx512 -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx512bf16 -mfma -mf16c -mavx2)
# amx: the avx512 flags plus the tile instructions (only src/cpu/*_amx.c).
set(HRMT_ISA_FLAGS_amx ${HRMT_ISA_FLAGS_avx512} -mamx-tile -mamx-bf16)
set(HRMT_ISA_FLAGS_neon "")

# Applies per-file flags to every src/cpu/*_<isa>.c in `files`; returns the
# files that belong to this target's ISAs in `out_var`.
function(hrmt_isa_sources out_var)
  set(kept)
  foreach(f IN LISTS ARGN)
    get_filename_component(stem ${f} NAME_WE)
    set(isa_of_file "")
    foreach(isa scalar avx2 avx512 amx neon)
      if(stem MATCHES "_${isa}$")
        set(isa_of_file ${isa})
      endif()
    endforeach()
    if(isa_of_file STREQUAL "")
      list(APPEND kept ${f})
    elseif(isa_of_file IN_LIST HRMT_ISAS)
      list(APPEND kept ${f})
      set_source_files_properties(${f} PROPERTIES COMPILE_OPTIONS "${HRMT_ISA_FLAGS_${isa_of_file}}")
    endif()
  endforeach()
  set(${out_var} ${kept} PARENT_SCOPE)
endfunction()
