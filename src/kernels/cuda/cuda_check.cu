// SPDX-License-Identifier: Apache-2.0
// Formatting of CUDA and cuBLAS failures, shared by SB_CUDA_CHECK and SB_CUBLAS_CHECK.
// Leaves out recovery: a failed CUDA call leaves the context in an unknown state.
#include "kernels/cuda/cuda_check.hpp"

namespace sb::kernels::cuda {

void throw_cuda_failure(const char* call, const char* library, const char* error_name,
                        const char* error_text, const char* file, int line) {
  throw Error(fmt::format("{} call `{}` failed: {} ({}) at {}:{}, {}", library, call, error_name,
                          error_text, file, line, where_am_i()));
}

}  // namespace sb::kernels::cuda
