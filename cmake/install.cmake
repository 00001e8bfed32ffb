# SPDX-License-Identifier: Apache-2.0
# `cmake --install build --prefix P`: the executable in P/bin; the engine's static libraries, the
# public headers and an exported CMake package (find_package(scalebench) gives scalebench::sb_*)
# in P/lib, P/include/scalebench and P/lib/cmake/scalebench; what the executable reads at run
# time (suites, site profiles, specs, analysis scripts, model configs and golden files) and, as
# the `datasets` component, the data sets under P/share/scalebench, where an installed binary
# finds them beside its bin/ (src/core/install_paths.hpp); an environment-module file in
# P/share/modulefiles/scalebench/<version>; the licence, notice and citation in
# P/share/doc/scalebench. Components: runtime (the executable and its files), development
# (libraries, headers, package), datasets.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

option(SB_INSTALL_DATASETS "install the data sets of data/ (what scripts/setup.sh fetched) with the executable" ON)

set(SB_LIBRARY_TARGETS sb_core sb_kernels sb_io sb_parallel sb_measure sb_launch sb_models sb_compress sb_plan
  sb_data sb_train sb_costmodel sb_jobs sb_validate sb_calibrate scalebench_deps)
foreach(optional sb_kernels_cuda sb_kernels_portable sb_nccl)
  if(TARGET ${optional})
    list(APPEND SB_LIBRARY_TARGETS ${optional})
  endif()
endforeach()

# The installed executable finds OpenBLAS's OpenMP build and Kokkos where it was built against
# (the same RPATH as the build tree's).
set_target_properties(scalebench PROPERTIES INSTALL_RPATH "${SB_OPENBLAS_DIR};${Kokkos_ROOT}/lib")
install(TARGETS scalebench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS ${SB_LIBRARY_TARGETS} EXPORT scalebenchTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/scalebench)

# Headers keep the paths the code includes them by: "core/check.hpp" (src/) and
# "models/gpt/gpt.hpp" (the root). The CLI's own headers are not library API.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/src/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/scalebench COMPONENT development
  FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h" PATTERN "*.cuh" PATTERN "cli" EXCLUDE)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/models/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/scalebench/models
  COMPONENT development FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")

install(EXPORT scalebenchTargets NAMESPACE scalebench:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/scalebench
  COMPONENT development)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/scalebenchConfig.cmake.in
  ${CMAKE_BINARY_DIR}/scalebenchConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/scalebench)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/scalebenchConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/scalebenchConfig.cmake ${CMAKE_BINARY_DIR}/scalebenchConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/scalebench COMPONENT development)

# What the executable reads at run time, under the folder names the source tree uses.
set(SB_SHARE ${CMAKE_INSTALL_DATADIR}/scalebench)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/suites ${CMAKE_SOURCE_DIR}/analysis DESTINATION ${SB_SHARE} COMPONENT runtime
  PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/jobs/sites ${CMAKE_SOURCE_DIR}/jobs/specs DESTINATION ${SB_SHARE}/jobs
  COMPONENT runtime)
install(FILES ${CMAKE_SOURCE_DIR}/jobs/README.md DESTINATION ${SB_SHARE}/jobs COMPONENT runtime)
# published runs the cost model is checked against (`predict --validate NAME`)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/validation DESTINATION ${SB_SHARE} COMPONENT runtime)
foreach(model gpt resnet)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/models/${model}/configs DESTINATION ${SB_SHARE}/models/${model}
    COMPONENT runtime)
  file(GLOB model_files ${CMAKE_SOURCE_DIR}/models/${model}/*.h5 ${CMAKE_SOURCE_DIR}/models/${model}/*.md)
  install(FILES ${model_files} DESTINATION ${SB_SHARE}/models/${model} COMPONENT runtime)
endforeach()
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs DESTINATION ${SB_SHARE} COMPONENT runtime)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/LICENSE ${CMAKE_SOURCE_DIR}/NOTICE
  ${CMAKE_SOURCE_DIR}/CITATION.cff DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
if(SB_INSTALL_DATASETS)
  # data/ as it is at install time (a missing data set is the run's clear error, as in a build tree)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/data/ DESTINATION ${SB_SHARE}/data COMPONENT datasets OPTIONAL
    PATTERN "*.tar*" EXCLUDE PATTERN "*.gz" EXCLUDE PATTERN "*.zip" EXCLUDE)
endif()

# The environment module (Tcl: read by Environment Modules and by Lmod), written at install
# time because only then is the prefix known (cmake --install --prefix).
install(CODE "
  set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
  set(PROJECT_VERSION \"${PROJECT_VERSION}\")
  set(bindir \"${CMAKE_INSTALL_BINDIR}\")
  set(sharedir \"${SB_SHARE}\")
  configure_file(\"${CMAKE_SOURCE_DIR}/cmake/scalebench.modulefile.in\"
    \"${CMAKE_BINARY_DIR}/modulefile/${PROJECT_VERSION}\" @ONLY)
" COMPONENT runtime)
install(FILES ${CMAKE_BINARY_DIR}/modulefile/${PROJECT_VERSION}
  DESTINATION ${CMAKE_INSTALL_DATADIR}/modulefiles/scalebench COMPONENT runtime)
