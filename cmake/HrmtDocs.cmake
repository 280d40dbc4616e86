# `docs` target: renders the public API (include/hrmt.h) to HTML with Doxygen, into
# <build>/docs/html. Present only when doxygen is installed (Debian: apt-get install doxygen).
find_package(Doxygen QUIET)
find_program(HRMT_AWK NAMES awk mawk gawk)
mark_as_advanced(HRMT_AWK)
if(DOXYGEN_FOUND AND HRMT_AWK)
  set(HRMT_DOCS_OUTPUT ${PROJECT_BINARY_DIR}/docs)
  configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in ${HRMT_DOCS_OUTPUT}/Doxyfile @ONLY)
  add_custom_target(docs
    COMMAND Doxygen::doxygen ${HRMT_DOCS_OUTPUT}/Doxyfile
    WORKING_DIRECTORY ${HRMT_DOCS_OUTPUT}
    SOURCES ${PROJECT_SOURCE_DIR}/include/hrmt.h ${PROJECT_SOURCE_DIR}/docs/Doxyfile.in
            ${PROJECT_SOURCE_DIR}/docs/doxygen-filter.awk
    COMMENT "Doxygen: include/hrmt.h -> ${HRMT_DOCS_OUTPUT}/html/index.html"
    VERBATIM)
  message(STATUS "hrmt: doxygen ${DOXYGEN_VERSION} found; `docs` target renders the API reference")
else()
  message(STATUS "hrmt: doxygen not found; no `docs` target (apt-get install doxygen)")
endif()
