# FindCriterion: locates criterion through pkg-config, with a plain search as fallback.
# Defines Criterion_FOUND and the imported target hrmt_dep::criterion.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PC_Criterion QUIET criterion)
endif()
find_path(Criterion_INCLUDE_DIR NAMES criterion/criterion.h HINTS ${PC_Criterion_INCLUDE_DIRS})
set(_hrmt_Criterion_names ${PC_Criterion_LIBRARIES})
if(NOT _hrmt_Criterion_names)
  set(_hrmt_Criterion_names criterion)
endif()
list(GET _hrmt_Criterion_names 0 _hrmt_Criterion_first)
find_library(Criterion_LIBRARY NAMES ${_hrmt_Criterion_first} HINTS ${PC_Criterion_LIBRARY_DIRS})
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Criterion REQUIRED_VARS Criterion_LIBRARY Criterion_INCLUDE_DIR)
if(Criterion_FOUND AND NOT TARGET hrmt_dep::criterion)
  add_library(hrmt_dep::criterion UNKNOWN IMPORTED)
  set_target_properties(hrmt_dep::criterion PROPERTIES
    IMPORTED_LOCATION "${Criterion_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Criterion_INCLUDE_DIR}")
endif()
mark_as_advanced(Criterion_INCLUDE_DIR Criterion_LIBRARY)
