# Installs the header, libhrmt.a, `hrmt`, hrmt.pc and the CMake package hrmt::hrmt.
# Everything installed is relocatable (hrmt.pc finds its prefix from its own
# directory, hrmtConfig.cmake likewise), so `cmake --install --prefix DIR`
# works and nothing installed points back into the build tree.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# A sanitized libhrmt.a needs the sanitizer runtimes in whatever links it.
set(HRMT_SANITIZE_LINK_FLAGS "")
if(HRMT_SANITIZE)
  set(HRMT_SANITIZE_LINK_FLAGS "-fsanitize=address,undefined")
  target_link_options(hrmt INTERFACE $<INSTALL_INTERFACE:${HRMT_SANITIZE_LINK_FLAGS}>)
endif()

install(FILES ${PROJECT_SOURCE_DIR}/include/hrmt.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS hrmt EXPORT hrmtTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET hrmt_shared)
  install(TARGETS hrmt_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(TARGETS hrmt_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# pkg-config: a static link (pkg-config --static) needs the private libraries too.
# With CUDA: the static runtime (cudart_static needs -ldl -lrt -lpthread), cuBLASLt
# (static or shared, see HrmtCuda.cmake) and the C++ runtime (nvcc's host code).
set(HRMT_INSTALL_WITH_CUDA ${HRMT_CUDA_ENABLED})
set(HRMT_PC_LIBS_PRIVATE "-lsleef -lhwloc -lcjson ${OpenMP_C_FLAGS} -lpthread -lm")
if(HRMT_INSTALL_WITH_CUDA)
  string(APPEND HRMT_PC_LIBS_PRIVATE " ${HRMT_CUDA_PC_LIBS}")
endif()
if(HRMT_SANITIZE_LINK_FLAGS)
  string(APPEND HRMT_PC_LIBS_PRIVATE " ${HRMT_SANITIZE_LINK_FLAGS}")
endif()
# prefix relative to the .pc file's own directory (pkg-config's ${pcfiledir}).
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(HRMT_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH _hrmt_pc_up "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" _hrmt_pc_up "${_hrmt_pc_up}")
  set(HRMT_PC_PREFIX "\${pcfiledir}/${_hrmt_pc_up}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/hrmt.pc.in ${PROJECT_BINARY_DIR}/hrmt.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hrmt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(EXPORT hrmtTargets NAMESPACE hrmt:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hrmt)
set(HRMT_CONFIG_NEEDS_CUDA ${HRMT_INSTALL_WITH_CUDA})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hrmtConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hrmtConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hrmt)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hrmtConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hrmtConfig.cmake ${PROJECT_BINARY_DIR}/hrmtConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindSLEEF.cmake ${PROJECT_SOURCE_DIR}/cmake/FindHWLOC.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindCJSON.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hrmt)
