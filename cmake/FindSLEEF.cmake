# FindSLEEF: locates sleef through pkg-config, with a plain search as fallback.
# Defines SLEEF_FOUND and the imported target hrmt_dep::sleef.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_SLEEF QUIET sleef)
endif()
find_path(SLEEF_INCLUDE_DIR NAMES sleef.h HINTS ${PC_SLEEF_INCLUDE_DIRS})
set(_hrmt_SLEEF_names ${PC_SLEEF_LIBRARIES})
if(NOT _hrmt_SLEEF_names)
  set(_hrmt_SLEEF_names sleef)
endif()
list(GET _hrmt_SLEEF_names 0 _hrmt_SLEEF_first)
find_library(SLEEF_LIBRARY NAMES ${_hrmt_SLEEF_first} HINTS ${PC_SLEEF_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(SLEEF REQUIRED_VARS SLEEF_LIBRARY SLEEF_INCLUDE_DIR)
if(SLEEF_FOUND AND NOT TARGET hrmt_dep::sleef)
  add_library(hrmt_dep::sleef UNKNOWN IMPORTED)
  set_target_properties(hrmt_dep::sleef PROPERTIES
    IMPORTED_LOCATION "${SLEEF_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${SLEEF_INCLUDE_DIR}")
endif()
mark_as_advanced(SLEEF_INCLUDE_DIR SLEEF_LIBRARY)
