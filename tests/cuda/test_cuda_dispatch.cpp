// SPDX-License-Identifier: Apache-2.0
// The engine's dispatch hands out the cuda kernels in a CUDA build, and cuBLAS is opened at its
// first call, not at the start of the process; both run without a GPU (function pointers, and
// cuBLAS functions that need no device). Leaves out the kernels themselves (test_cuda_*.cpp).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "kernels/kernels.hpp"

namespace sb::kernels {
namespace {

TEST(CudaDispatch, KernelsForCudaIsTheCudaTable) {
  const KernelTable& table = kernels_for(Backend::cuda);
  EXPECT_EQ(table.matmul_forward, &cuda::matmul_forward);
  EXPECT_EQ(table.attention_backward, &cuda::attention_backward);
  EXPECT_EQ(table.sgd_update, &cuda::sgd_update);
  EXPECT_EQ(table.convert_f32_to_bf16, &cuda::convert_f32_to_bf16);
  EXPECT_EQ(table.convert_fp16_to_f32, &cuda::convert_fp16_to_f32);
  EXPECT_EQ(parse_backend("cuda"), Backend::cuda);
}

// Before any cuBLAS call neither library is loaded (a CPU run pays nothing for them); the first
// call opens them and answers.
TEST(CudaDispatch, CublasOpensAtItsFirstCall) {
  const std::string major = std::to_string(CUBLAS_VER_MAJOR);
  for (const std::string library : {"libcublas.so.", "libcublasLt.so."})
    EXPECT_EQ(dlopen((library + major).c_str(), RTLD_NOW | RTLD_NOLOAD), nullptr) << library << major << " loaded at start";
  EXPECT_EQ(std::string(cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED)), "CUBLAS_STATUS_NOT_INITIALIZED");
  EXPECT_GE(cublasLtGetVersion() / 10000, static_cast<std::size_t>(CUBLAS_VER_MAJOR));
  void* loaded = dlopen(("libcublas.so." + major).c_str(), RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(loaded, nullptr);
  if (loaded) dlclose(loaded);
}

}  // namespace
}  // namespace sb::kernels
