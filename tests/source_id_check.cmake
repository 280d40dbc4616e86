# ctest source_id_check: cmake/HrmtSourceId.cmake's id is a function of the
# files' paths and contents and of the salt, and the header is left alone
# when the id does not change.
#   cmake -DSCRIPT=cmake/HrmtSourceId.cmake -DWORK=dir -P source_id_check.cmake
cmake_minimum_required(VERSION 3.25)
set(root "${WORK}/src")
set(out "${WORK}/id.h")
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${root}/sub")
file(WRITE "${root}/a.cu" "kernel a\n")
file(WRITE "${root}/sub/b.cuh" "header b\n")

function(run_id salt result)
  execute_process(COMMAND "${CMAKE_COMMAND}" "-DROOT=${root}" "-DOUT=${out}" "-DSALT=${salt}"
                          -P "${SCRIPT}" RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "HrmtSourceId.cmake failed (${rc}): ${err}")
  endif()
  file(STRINGS "${out}" line REGEX "^#define HRMT_CUDA_SOURCE_ID \"[0-9a-f]+\"$")
  string(REGEX REPLACE ".*\"([0-9a-f]+)\".*" "\\1" id "${line}")
  string(LENGTH "${id}" n)
  if(NOT n EQUAL 16)
    message(FATAL_ERROR "no 16-digit id in ${out}: '${line}'")
  endif()
  set(${result} "${id}" PARENT_SCOPE)
endfunction()

function(expect what a op b)
  if(op STREQUAL "==" AND NOT a STREQUAL b)
    message(FATAL_ERROR "${what}: ${a} != ${b}")
  elseif(op STREQUAL "!=" AND a STREQUAL b)
    message(FATAL_ERROR "${what}: both ${a}")
  endif()
endfunction()

run_id("Release" id0)
file(TIMESTAMP "${out}" t0 "%s")
# Past the next whole second, so that a rewrite would show in the time stamp.
execute_process(COMMAND "${CMAKE_COMMAND}" -E sleep 1.1)
run_id("Release" id1)
expect("the same files twice" "${id0}" == "${id1}")
file(TIMESTAMP "${out}" t1 "%s")
expect("header left alone when the id is the same" "${t0}" == "${t1}")

file(WRITE "${root}/a.cu" "kernel a, changed\n")
run_id("Release" id2)
expect("a file's content changed" "${id0}" != "${id2}")
file(WRITE "${root}/a.cu" "kernel a\n")
run_id("Release" id3)
expect("the content restored" "${id0}" == "${id3}")

file(WRITE "${root}/sub/b.cuh" "header b\n\n")
run_id("Release" id4)
expect("a nested header changed" "${id0}" != "${id4}")
file(WRITE "${root}/sub/b.cuh" "header b\n")

file(WRITE "${root}/c.cu" "")
run_id("Release" id5)
expect("a file added" "${id0}" != "${id5}")
file(REMOVE "${root}/c.cu")

file(RENAME "${root}/a.cu" "${root}/z.cu")
run_id("Release" id6)
expect("a file renamed" "${id0}" != "${id6}")
file(RENAME "${root}/z.cu" "${root}/a.cu")

run_id("Debug" id7)
expect("another salt" "${id0}" != "${id7}")
run_id("Release" id8)
expect("back to the first salt" "${id0}" == "${id8}")

execute_process(COMMAND "${CMAKE_COMMAND}" "-DROOT=${WORK}/missing" "-DOUT=${out}"
                        -P "${SCRIPT}" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(rc EQUAL 0)
  message(FATAL_ERROR "a missing ROOT was accepted")
endif()
file(REMOVE_RECURSE "${WORK}")
message(STATUS "source id checks passed (${id0})")
