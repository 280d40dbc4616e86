# Installs the header, libhrmt.a, `hrmt`, hrmt.pc and the CMake package hrmt::hrmt.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(FILES ${PROJECT_SOURCE_DIR}/include/hrmt.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS hrmt EXPORT hrmtTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TARGET hrmt_shared)
  install(TARGETS hrmt_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
install(TARGETS hrmt_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# pkg-config: a static link needs the private libraries too.
set(HRMT_PC_LIBS_PRIVATE "-lsleef -lhwloc -lcjson -fopenmp -lpthread -lm")
if(HRMT_CUDA_ENABLED)
  string(APPEND HRMT_PC_LIBS_PRIVATE " -lcudart -lcublas -lstdc++")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/hrmt.pc.in ${PROJECT_BINARY_DIR}/hrmt.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hrmt.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(EXPORT hrmtTargets NAMESPACE hrmt:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hrmt)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hrmtConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hrmtConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hrmt)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hrmtConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hrmtConfig.cmake ${PROJECT_BINARY_DIR}/hrmtConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindSLEEF.cmake ${PROJECT_SOURCE_DIR}/cmake/FindHWLOC.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FindCJSON.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hrmt)
