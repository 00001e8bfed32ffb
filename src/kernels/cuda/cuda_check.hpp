// SPDX-License-Identifier: Apache-2.0
// Check macros for the CUDA runtime and cuBLAS/cuBLASLt: a failure throws sb::Error naming
// the call, the error, file:line and host (rank). Leaves out NCCL (its own macro, later).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "core/check.hpp"

namespace sb::kernels::cuda {

[[noreturn]] void throw_cuda_failure(const char* call, const char* library, const char* error_name,
                                     const char* error_text, const char* file, int line);

}  // namespace sb::kernels::cuda

#define SB_CUDA_CHECK(call)                                                                  \
  do {                                                                                       \
    const cudaError_t sb_cuda_status_ = (call);                                              \
    if (sb_cuda_status_ != cudaSuccess)                                                      \
      ::sb::kernels::cuda::throw_cuda_failure(#call, "CUDA", cudaGetErrorName(sb_cuda_status_), \
                                              cudaGetErrorString(sb_cuda_status_), __FILE__, \
                                              __LINE__);                                     \
  } while (0)

// cuBLAS and cuBLASLt share cublasStatus_t.
#define SB_CUBLAS_CHECK(call)                                                                \
  do {                                                                                       \
    const cublasStatus_t sb_cublas_status_ = (call);                                         \
    if (sb_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                          \
      ::sb::kernels::cuda::throw_cuda_failure(#call, "cuBLAS",                               \
                                              cublasGetStatusName(sb_cublas_status_),        \
                                              cublasGetStatusString(sb_cublas_status_),      \
                                              __FILE__, __LINE__);                           \
  } while (0)

// After a kernel launch: catches bad launch configurations at once (not asynchronous faults).
#define SB_CUDA_CHECK_LAUNCH() SB_CUDA_CHECK(cudaGetLastError())
