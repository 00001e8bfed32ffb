// SPDX-License-Identifier: Apache-2.0
// The cuda int8 inference kernels equal the reference bit for bit: quantisation (rounding ties to
// even, saturation), the int8 GEMM with per-channel dequantisation over odd shapes, with and
// without bias, and the channels-last int8 convolution. Skips without a GPU. Leaves out the cpu
// kernels (tests/kernels).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "../kernels/int8_test_values.hpp"
#include "cuda_test_support.hpp"

namespace sb::kernels::testing {
namespace {

class CudaInt8 : public CudaTest {};

constexpr std::uint64_t kSeed = 43;

TEST_F(CudaInt8, QuantizeEqualsReference) {
  const i64 n = 1'000'003;
  auto inp = random_floats(kSeed, n, 1, 3.0);
  inp[0] = 1e30f, inp[1] = -1e30f, inp[2] = 0.025f, inp[3] = 0.075f;
  std::vector<std::int8_t> expected(n);
  reference::quantize_int8(expected.data(), inp.data(), 0.05f, n);
  const cuda::DeviceBuffer<float> d_inp(inp);
  cuda::DeviceBuffer<std::int8_t> d_out(n);
  cuda_kernels().quantize_int8(d_out.data(), d_inp.data(), 0.05f, n);
  EXPECT_EQ(d_out.to_host(), expected);
}

TEST_F(CudaInt8, MatmulEqualsReferenceBitForBit) {
  struct Shape {
    i64 BT, C, OC;
  };
  std::uint64_t stream = 10;
  for (const Shape s : {Shape{1, 1, 1}, Shape{37, 144, 16}, Shape{65, 257, 31}, Shape{127, 1024, 256}}) {
    const auto inp = random_int8(kSeed, s.BT * s.C, ++stream), weight = random_int8(kSeed, s.OC * s.C, ++stream);
    auto weight_scale = random_floats(kSeed, s.OC, ++stream, 1e-3);
    for (float& w : weight_scale) w = std::abs(w) + 1e-5f;
    const auto bias = random_floats(kSeed, s.OC, ++stream, 1.0);
    const cuda::DeviceBuffer<std::int8_t> d_inp(inp), d_weight(weight);
    const cuda::DeviceBuffer<float> d_scale(weight_scale), d_bias(bias);
    for (const bool with_bias : {true, false}) {
      std::vector<float> expected(s.BT * s.OC);
      reference::int8_matmul_forward(expected.data(), inp.data(), weight.data(), 0.0173f, weight_scale.data(),
                                     with_bias ? bias.data() : nullptr, s.BT, s.C, s.OC);
      cuda::DeviceBuffer<float> d_out(s.BT * s.OC);
      cuda_kernels().int8_matmul_forward(d_out.data(), d_inp.data(), d_weight.data(), 0.0173f, d_scale.data(),
                                         with_bias ? d_bias.data() : nullptr, s.BT, s.C, s.OC);
      EXPECT_EQ(d_out.to_host(), expected) << "BT=" << s.BT << " C=" << s.C << " OC=" << s.OC;
    }
  }
}

TEST_F(CudaInt8, ConvolutionEqualsReferenceBitForBit) {
  struct Shape {
    i64 N, C, H, W, OC, KH, KW, stride, pad;
  };
  std::uint64_t stream = 50;
  for (const Shape s : {Shape{4, 1, 28, 28, 16, 3, 3, 1, 1}, Shape{3, 16, 9, 7, 32, 3, 3, 2, 1},
                        Shape{2, 5, 6, 6, 7, 1, 1, 2, 0}, Shape{1, 2, 3, 3, 5, 3, 3, 2, 3}}) {
    const i64 outputs = s.N * conv2d_output_size(s.H, s.KH, s.stride, s.pad) *
                        conv2d_output_size(s.W, s.KW, s.stride, s.pad) * s.OC;
    const auto inp = random_int8(kSeed, s.N * s.H * s.W * s.C, ++stream);
    const auto weight = random_int8(kSeed, s.OC * s.C * s.KH * s.KW, ++stream);
    auto weight_scale = random_floats(kSeed, s.OC, ++stream, 1e-3);
    for (float& w : weight_scale) w = std::abs(w) + 1e-5f;
    const auto bias = random_floats(kSeed, s.OC, ++stream, 1.0);
    const cuda::DeviceBuffer<std::int8_t> d_inp(inp), d_weight(weight);
    const cuda::DeviceBuffer<float> d_scale(weight_scale), d_bias(bias);
    std::vector<float> expected(outputs);
    reference::int8_conv2d_forward(expected.data(), inp.data(), weight.data(), 0.0173f, weight_scale.data(),
                                   bias.data(), s.N, s.C, s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad);
    cuda::DeviceBuffer<float> d_out(outputs);
    cuda_kernels().int8_conv2d_forward(d_out.data(), d_inp.data(), d_weight.data(), 0.0173f, d_scale.data(),
                                       d_bias.data(), s.N, s.C, s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad);
    EXPECT_EQ(d_out.to_host(), expected) << "N=" << s.N << " C=" << s.C << " OC=" << s.OC << " k=" << s.KH;
  }
}

}  // namespace
}  // namespace sb::kernels::testing
