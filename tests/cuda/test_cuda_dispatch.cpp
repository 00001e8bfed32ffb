// SPDX-License-Identifier: Apache-2.0
// The engine's dispatch hands out the cuda kernels in a CUDA build; runs without a GPU (it
// compares function pointers only). Leaves out the kernels themselves (test_cuda_*.cpp).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace sb::kernels
