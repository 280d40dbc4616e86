# FindCJSON: locates libcjson through pkg-config, with a plain search as fallback.
# Defines CJSON_FOUND and the imported target hrmt_dep::libcjson.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_CJSON QUIET libcjson)
endif()
find_path(CJSON_INCLUDE_DIR NAMES cjson/cJSON.h HINTS ${PC_CJSON_INCLUDE_DIRS})
set(_hrmt_CJSON_names ${PC_CJSON_LIBRARIES})
if(NOT _hrmt_CJSON_names)
  set(_hrmt_CJSON_names libcjson)
endif()
list(GET _hrmt_CJSON_names 0 _hrmt_CJSON_first)
find_library(CJSON_LIBRARY NAMES ${_hrmt_CJSON_first} HINTS ${PC_CJSON_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CJSON REQUIRED_VARS CJSON_LIBRARY CJSON_INCLUDE_DIR)
if(CJSON_FOUND AND NOT TARGET hrmt_dep::libcjson)
  add_library(hrmt_dep::libcjson UNKNOWN IMPORTED)
  set_target_properties(hrmt_dep::libcjson PROPERTIES
    IMPORTED_LOCATION "${CJSON_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CJSON_INCLUDE_DIR}")
endif()
mark_as_advanced(CJSON_INCLUDE_DIR CJSON_LIBRARY)
