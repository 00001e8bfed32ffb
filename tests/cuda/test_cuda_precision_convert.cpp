// SPDX-License-Identifier: Apache-2.0
// The cuda float <-> bf16/fp16 conversion kernels equal the reference bit for bit (NaN payloads
// included) on a few million values, and through the cuda table. Skips without a GPU. Leaves
// out the rounding rules themselves (tests/precision).
#include <gtest/gtest.h>

#include <vector>

#include "../kernels/conversion_inputs.hpp"
#include "cuda_test_support.hpp"

namespace sb::kernels::testing {
namespace {

class CudaPrecisionConvert : public CudaTest {};

constexpr i64 kValues = 3'000'017;  // many grid-stride rounds, the last one partial

TEST_F(CudaPrecisionConvert, FloatToBf16EqualsReference) {
  const std::vector<float> inp = conversion_test_floats(kValues);
  std::vector<bf16> expected(inp.size());
  reference::convert_f32_to_bf16(expected.data(), inp.data(), kValues);
  const cuda::DeviceBuffer<float> d_inp(inp);
  cuda::DeviceBuffer<bf16> d_out(kValues);
  cuda_kernels().convert_f32_to_bf16(d_out.data(), d_inp.data(), kValues);
  EXPECT_EQ(first_bit_difference(d_out.to_host(), expected), -1);
}

TEST_F(CudaPrecisionConvert, FloatToFp16EqualsReference) {
  const std::vector<float> inp = conversion_test_floats(kValues);
  std::vector<fp16> expected(inp.size());
  reference::convert_f32_to_fp16(expected.data(), inp.data(), kValues);
  const cuda::DeviceBuffer<float> d_inp(inp);
  cuda::DeviceBuffer<fp16> d_out(kValues);
  cuda_kernels().convert_f32_to_fp16(d_out.data(), d_inp.data(), kValues);
  EXPECT_EQ(first_bit_difference(d_out.to_host(), expected), -1);
}

TEST_F(CudaPrecisionConvert, Bf16ToFloatEqualsReference) {
  const std::vector<bf16> inp = conversion_test_halves<bf16>(kValues);
  std::vector<float> expected(inp.size());
  reference::convert_bf16_to_f32(expected.data(), inp.data(), kValues);
  const cuda::DeviceBuffer<bf16> d_inp(inp);
  cuda::DeviceBuffer<float> d_out(kValues);
  cuda_kernels().convert_bf16_to_f32(d_out.data(), d_inp.data(), kValues);
  EXPECT_EQ(first_bit_difference(d_out.to_host(), expected), -1);
}

TEST_F(CudaPrecisionConvert, Fp16ToFloatEqualsReference) {
  const std::vector<fp16> inp = conversion_test_halves<fp16>(kValues);
  std::vector<float> expected(inp.size());
  reference::convert_fp16_to_f32(expected.data(), inp.data(), kValues);
  const cuda::DeviceBuffer<fp16> d_inp(inp);
  cuda::DeviceBuffer<float> d_out(kValues);
  cuda_kernels().convert_fp16_to_f32(d_out.data(), d_inp.data(), kValues);
  EXPECT_EQ(first_bit_difference(d_out.to_host(), expected), -1);
}

}  // namespace
}  // namespace sb::kernels::testing
