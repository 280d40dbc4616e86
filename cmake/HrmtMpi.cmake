# Optional MPI front end, hrmt-mpi (src/cli/mpi_*.c; docs/MPI.md).
# HRMT_MPI=AUTO builds it when find_package(MPI COMPONENTS C) finds an MPI
# (Debian: libopenmpi-dev), ON requires one, OFF never looks. Only hrmt-mpi
# links MPI: the library and the `hrmt` command stay free of it. Sets
# HRMT_MPI_ENABLED (in the including directory: test `TARGET hrmt_mpi`
# elsewhere); find_package(MPI) caches MPIEXEC_EXECUTABLE (mpirun).
set(HRMT_MPI AUTO CACHE STRING "hrmt-mpi (MPI front end): AUTO (on when MPI is found), ON, OFF")
set_property(CACHE HRMT_MPI PROPERTY STRINGS AUTO ON OFF)
set(HRMT_MPI_ENABLED OFF)
if(NOT HRMT_MPI STREQUAL "OFF")
  if(HRMT_MPI STREQUAL "ON")
    find_package(MPI REQUIRED COMPONENTS C)
  else()
    find_package(MPI QUIET COMPONENTS C)
  endif()
  if(MPI_C_FOUND)
    set(HRMT_MPI_ENABLED ON)
  endif()
endif()
message(STATUS "hrmt: MPI front end hrmt-mpi ${HRMT_MPI_ENABLED} (MPI ${MPI_C_VERSION})")
