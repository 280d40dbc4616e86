# External dependencies, all Debian 12 packages, found through pkg-config.
find_package(PkgConfig REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS C)
find_package(Threads REQUIRED)
find_package(SLEEF REQUIRED)
find_package(HWLOC REQUIRED)
find_package(CJSON REQUIRED)
