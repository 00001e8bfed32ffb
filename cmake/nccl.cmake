# SPDX-License-Identifier: Apache-2.0
# NCCL for the GPU communicator (src/parallel/nccl_communicator.cpp), included from the root
# CMakeLists.txt after cmake/cuda.cmake. SB_ENABLE_NCCL: AUTO uses NCCL when CUDA is on and
# nccl.h and libnccl are found; ON fails the configure when they are not; OFF never uses it.
# Without NCCL the communicator still compiles: its functions say the build lacks NCCL.
# Leaves out the static libnccl (300 MB of device code per binary) and NCCL's own CMake package
# (the CUDA toolkit's layout has none).
set(SB_HAVE_NCCL OFF)
if(SB_ENABLE_NCCL STREQUAL "OFF")
  message(STATUS "scalebench: NCCL off (SB_ENABLE_NCCL=OFF)")
  return()
endif()
if(NOT SB_ENABLE_NCCL MATCHES "^(AUTO|ON)$")
  message(FATAL_ERROR "SB_ENABLE_NCCL must be AUTO, ON or OFF, not '${SB_ENABLE_NCCL}'")
endif()
if(NOT SB_HAVE_CUDA)
  if(SB_ENABLE_NCCL STREQUAL "ON")
    message(FATAL_ERROR "SB_ENABLE_NCCL=ON needs the CUDA back-end, but CUDA is off or not found "
                        "(SB_ENABLE_CUDA=${SB_ENABLE_CUDA})")
  endif()
  message(STATUS "scalebench: NCCL off (no CUDA)")
  return()
endif()

# NCCL_ROOT (a cache or environment variable) points at an install outside the toolkit.
find_path(SB_NCCL_INCLUDE_DIR nccl.h
  HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_ROOT}
  PATH_SUFFIXES include)
find_library(SB_NCCL_LIBRARY NAMES nccl
  HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}
  PATH_SUFFIXES lib lib64)
if(NOT SB_NCCL_INCLUDE_DIR OR NOT SB_NCCL_LIBRARY)
  if(SB_ENABLE_NCCL STREQUAL "ON")
    message(FATAL_ERROR "SB_ENABLE_NCCL=ON but NCCL was not found (nccl.h: ${SB_NCCL_INCLUDE_DIR}, "
                        "libnccl: ${SB_NCCL_LIBRARY}); install it (apt-get install libnccl-dev) or "
                        "set NCCL_ROOT to its prefix")
  endif()
  message(STATUS "scalebench: NCCL not found; GPU communicators off")
  return()
endif()

file(STRINGS ${SB_NCCL_INCLUDE_DIR}/nccl.h SB_NCCL_VERSION_LINES
  REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
set(SB_NCCL_HEADER_VERSION "")
foreach(part MAJOR MINOR PATCH)
  string(REGEX MATCH "NCCL_${part} +([0-9]+)" _ "${SB_NCCL_VERSION_LINES}")
  string(APPEND SB_NCCL_HEADER_VERSION "${CMAKE_MATCH_1}.")
endforeach()
string(REGEX REPLACE "\\.$" "" SB_NCCL_HEADER_VERSION "${SB_NCCL_HEADER_VERSION}")

set(SB_HAVE_NCCL ON)
add_library(sb_nccl INTERFACE)
target_include_directories(sb_nccl SYSTEM INTERFACE ${SB_NCCL_INCLUDE_DIR})
target_link_libraries(sb_nccl INTERFACE ${SB_NCCL_LIBRARY} CUDA::cudart_static)

# The communicator's CUDA calls report through SB_CUDA_CHECK (sb_kernels_cuda); sb_core again
# after it, as static archives resolve left to right.
target_link_libraries(sb_parallel PUBLIC sb_nccl sb_kernels_cuda sb_core)
target_compile_definitions(sb_parallel PRIVATE SB_HAVE_NCCL)
message(STATUS "scalebench: NCCL ${SB_NCCL_HEADER_VERSION} (${SB_NCCL_LIBRARY})")
