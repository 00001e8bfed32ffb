# SPDX-License-Identifier: Apache-2.0
# The CUDA back-end (included from the root CMakeLists.txt after the engine libraries):
# sb_kernels_cuda (src/kernels/cuda/*.cu, cuBLAS/cuBLASLt) linked into sb_kernels, and
# sb_kernels_portable (reference kernels and checks without MPI), so that the GPU tests and
# benchmarks link only CUDA, fmt and GoogleTest/Benchmark and run on a node that has no MPI,
# HDF5, Kokkos or OpenBLAS (scripts/gpu_bundle.sh carries them there).
if(NOT SB_HAVE_CUDA)
  return()
endif()

# sm_90 (H100/H200) only by default: each extra architecture doubles device compile time on
# the 2-core CI machines. Never "native": it fails where no GPU is visible.
if(NOT CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
if(NOT CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
endif()
enable_language(CUDA)
# C++17 for device code: nvcc 13.0's front end aborts on libstdc++ 12's C++20 headers
# ("internal error ... find_allocated_name_reference" in stl_construct.h).
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)

file(GLOB SB_CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/kernels/cuda/*.cu)
add_library(sb_kernels_cuda STATIC ${SB_CUDA_SOURCES})
target_include_directories(sb_kernels_cuda PUBLIC ${SB_INCLUDE_DIRS})
target_compile_options(sb_kernels_cuda PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:--extended-lambda --expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra>)
# The static runtime: test binaries need no libcudart.so on the GPU node, only the driver
# and cuBLAS. cuBLAS and cuBLASLt are opened at their first call (cublas_lazy.cu), not linked:
# their initialisers cost every process 0.33 s at start, GPU or not. The check functions
# (sb::throw_check_failure, where_am_i) come from whichever of sb_core or sb_kernels_portable
# the binary links after this library.
target_link_libraries(sb_kernels_cuda PUBLIC CUDA::cudart_static fmt::fmt ${CMAKE_DL_LIBS})
target_include_directories(sb_kernels_cuda SYSTEM PUBLIC ${CUDAToolkit_INCLUDE_DIRS})
target_compile_definitions(sb_kernels_cuda PRIVATE
  SB_CUBLAS_SONAME="libcublas.so.${CUDAToolkit_VERSION_MAJOR}"
  SB_CUBLASLT_SONAME="libcublasLt.so.${CUDAToolkit_VERSION_MAJOR}"
  SB_CUDA_LIBRARY_DIR="${CUDAToolkit_LIBRARY_DIR}" SB_CUDA_VERSION_MAJOR=${CUDAToolkit_VERSION_MAJOR})
set_target_properties(sb_kernels_cuda PROPERTIES POSITION_INDEPENDENT_CODE ON
  CUDA_SEPARABLE_COMPILATION OFF)

# Tracked buffers on the GPU (src/core/device_memory.cpp) allocate through the runtime.
target_link_libraries(sb_core PUBLIC CUDA::cudart_static)
target_compile_definitions(sb_core PRIVATE SB_HAVE_CUDA)
# sb_core again after the CUDA library: static archives resolve left to right.
target_link_libraries(sb_kernels PUBLIC sb_kernels_cuda sb_core)
target_compile_definitions(sb_kernels PRIVATE SB_HAVE_CUDA)

file(GLOB SB_REFERENCE_KERNEL_SOURCES CONFIGURE_DEPENDS
  ${CMAKE_SOURCE_DIR}/src/kernels/reference/*.cpp)
add_library(sb_kernels_portable STATIC ${SB_REFERENCE_KERNEL_SOURCES}
  ${CMAKE_SOURCE_DIR}/src/core/check.cpp ${CMAKE_SOURCE_DIR}/src/core/tensor.cpp)
target_include_directories(sb_kernels_portable PUBLIC ${SB_INCLUDE_DIRS})
target_compile_definitions(sb_kernels_portable PRIVATE SB_WITHOUT_MPI)
target_compile_options(sb_kernels_portable PRIVATE -Wall -Wextra)
target_link_libraries(sb_kernels_portable PUBLIC fmt::fmt)

message(STATUS "scalebench: CUDA kernels for sm_${CMAKE_CUDA_ARCHITECTURES} (nvcc ${CMAKE_CUDA_COMPILER_VERSION})")
