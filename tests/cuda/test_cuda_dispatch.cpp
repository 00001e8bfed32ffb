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
  EXPECT_EQ(parse_backend("cuda"), Backend::cuda);
}

}  // namespace
}  // namespace sb::kernels
