# FindHWLOC: locates hwloc through pkg-config, with a plain search as fallback.
# Defines HWLOC_FOUND and the imported target hrmt_dep::hwloc.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_HWLOC QUIET hwloc)
endif()
find_path(HWLOC_INCLUDE_DIR NAMES hwloc.h HINTS ${PC_HWLOC_INCLUDE_DIRS})
set(_hrmt_HWLOC_names ${PC_HWLOC_LIBRARIES})
if(NOT _hrmt_HWLOC_names)
  set(_hrmt_HWLOC_names hwloc)
endif()
list(GET _hrmt_HWLOC_names 0 _hrmt_HWLOC_first)
find_library(HWLOC_LIBRARY NAMES ${_hrmt_HWLOC_first} HINTS ${PC_HWLOC_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(HWLOC REQUIRED_VARS HWLOC_LIBRARY HWLOC_INCLUDE_DIR)
if(HWLOC_FOUND AND NOT TARGET hrmt_dep::hwloc)
  add_library(hrmt_dep::hwloc UNKNOWN IMPORTED)
  set_target_properties(hrmt_dep::hwloc PROPERTIES
    IMPORTED_LOCATION "${HWLOC_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${HWLOC_INCLUDE_DIR}")
endif()
mark_as_advanced(HWLOC_INCLUDE_DIR HWLOC_LIBRARY)
