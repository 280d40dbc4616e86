# Optional CUDA backend. HRMT_CUDA=AUTO turns it on when nvcc is found (on PATH,
# through CUDACXX / CMAKE_CUDA_COMPILER, or at /usr/local/cuda/bin/nvcc), ON
# requires it, OFF never looks. The CPU library never needs CUDA.
#
# The kernels (src/cuda/*.cu) are compiled for sm_90 (SASS) plus compute_80 PTX
# (any newer GPU JIT-compiles that) into an object library that goes into the
# same libhrmt.a. The CUDA runtime is linked statically (CUDA::cudart_static:
# needs -ldl -lrt -lpthread), cuBLASLt statically when the toolkit ships
# libcublasLt_static.a, else as the shared libcublasLt.so (CUDA 13's toolkit
# on our machines has no static cuBLASLt). So a program embedding hrmt needs
# the NVIDIA driver and, in the shared case, libcublasLt.so.N at run time.
#
# Included from the top-level CMakeLists.txt (so the CUDA language and the
# CUDA:: targets exist in every directory); src/CMakeLists.txt builds the
# object library. Sets HRMT_CUDA_ENABLED, HRMT_CUDA_SOURCES, HRMT_CUDA_LIBS
# (link items of hrmt), HRMT_CUDA_PC_LIBS (pkg-config Libs.private words) and
# HRMT_CUDA_CUBLASLT_STATIC.
set(HRMT_CUDA_LIBS "")
set(HRMT_CUDA_ENABLED OFF)
file(GLOB HRMT_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/cuda/*.cu)
if(NOT HRMT_CUDA STREQUAL "OFF" AND HRMT_CUDA_SOURCES)
  # nvcc is often not on PATH (CI's image): look where the toolkit installs.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(HRMT_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATHS /usr/local/cuda/bin
                 PATH_SUFFIXES bin)
    if(HRMT_NVCC)
      set(ENV{CUDACXX} "${HRMT_NVCC}")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(HRMT_CUDA_ENABLED ON)
  elseif(HRMT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "HRMT_CUDA=ON but no CUDA compiler was found "
                        "(set CMAKE_CUDA_COMPILER or put nvcc on PATH)")
  endif()
endif()

set(HRMT_CUDA_PC_LIBS "")
set(HRMT_CUDA_CUBLASLT_STATIC OFF)
if(HRMT_CUDA_ENABLED)
  if(TARGET CUDA::cublasLt_static)
    set(HRMT_CUDA_CUBLASLT_STATIC ON)
    set(_hrmt_lt CUDA::cublasLt_static CUDA::culibos)
    set(_hrmt_lt_pc "-lcublasLt_static -lculibos")
  else()
    set(_hrmt_lt CUDA::cublasLt)
    # The shared cuBLASLt lives outside the loader's default path: an rpath
    # lets a program linked with these flags find it without LD_LIBRARY_PATH.
    set(_hrmt_lt_pc "-lcublasLt -Wl,-rpath,${CUDAToolkit_LIBRARY_DIR}")
  endif()
  set(HRMT_CUDA_LIBS CUDA::cudart_static ${_hrmt_lt} stdc++)
  set(HRMT_CUDA_PC_LIBS
      "-L${CUDAToolkit_LIBRARY_DIR} -lcudart_static ${_hrmt_lt_pc} -ldl -lrt -lpthread -lstdc++")
endif()
message(STATUS "hrmt: CUDA backend ${HRMT_CUDA_ENABLED} (cuBLASLt static: ${HRMT_CUDA_CUBLASLT_STATIC})")
