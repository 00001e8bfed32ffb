// SPDX-License-Identifier: Apache-2.0
// The int8 inference convolution (NHWC): the reference against a float convolution on integer
// values (exact), and the cpu kernel against the reference bit for bit over awkward shapes
// (one channel, odd channels and sizes, strides, 1×1, 5×5, non-square kernels, padding wider
// than the kernel's reach), with and without bias, at full ±127 range, on oneDNN's VNNI/AMX
// sums where the CPU has them and on the own unfolded GEMM below (int8_matmul_isa_* cap the
// ISA); weights changed in place between calls are used as changed. Leaves out cuda
// (tests/cuda) and the quantised layers (tests/compress).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ostream>
#include <vector>

#include "core/cpu_isa.hpp"
#include "kernels/cpu/onednn_int8_conv2d.hpp"
#include "kernels/kernels.hpp"
#include "int8_test_values.hpp"

namespace sb::kernels::testing {
namespace {

constexpr std::uint64_t kSeed = 44;

struct ConvShape {
  i64 N, C, H, W, OC, KH, KW, stride, pad;
  i64 OH() const { return conv2d_output_size(H, KH, stride, pad); }
  i64 OW() const { return conv2d_output_size(W, KW, stride, pad); }
  i64 inputs() const { return N * H * W * C; }
  i64 weights() const { return OC * C * KH * KW; }
  i64 outputs() const { return N * OH() * OW() * OC; }
};

std::ostream& operator<<(std::ostream& os, const ConvShape& s) {
  return os << "N" << s.N << " C" << s.C << " " << s.H << "x" << s.W << " OC" << s.OC << " k" << s.KH << "x" << s.KW
            << " stride " << s.stride << " pad " << s.pad;
}

const ConvShape kShapes[] = {
    {4, 1, 28, 28, 16, 3, 3, 1, 1},  // resnet-mini's stem: one input channel
    {3, 16, 9, 7, 32, 3, 3, 2, 1},   // a stage's first convolution, odd sizes
    {2, 33, 8, 8, 17, 3, 3, 1, 1},   // channels off every vector width
    {2, 5, 6, 6, 7, 1, 1, 2, 0},     // a 1×1 shortcut
    {1, 3, 5, 5, 3, 5, 5, 1, 2},     // 5×5
    {2, 4, 5, 7, 6, 3, 1, 1, 1},     // non-square kernel
    {1, 2, 3, 3, 5, 3, 3, 2, 3},     // padding wider than the kernel reaches
    {1, 1, 1, 1, 1, 1, 1, 1, 0},
};

void expect_cpu_equals_reference(const ConvShape& s, const std::vector<std::int8_t>& inp,
                                 const std::vector<std::int8_t>& weight, const std::vector<float>& weight_scale,
                                 const float* bias) {
  std::vector<float> expected(s.outputs(), -1), actual(s.outputs(), -2);
  reference::int8_conv2d_forward(expected.data(), inp.data(), weight.data(), 0.0173f, weight_scale.data(), bias, s.N,
                                 s.C, s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad);
  cpu::int8_conv2d_forward(actual.data(), inp.data(), weight.data(), 0.0173f, weight_scale.data(), bias, s.N, s.C,
                           s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad);
  EXPECT_EQ(first_bit_difference(actual, expected), -1) << s << (bias ? " with bias" : " without bias");
}

TEST(Int8Conv2d, ReferenceEqualsFloatConvolutionOnIntegers) {
  std::uint64_t stream = 0;
  for (const ConvShape& s : kShapes) {
    const auto inp = random_int8(kSeed, s.inputs(), ++stream), weight = random_int8(kSeed, s.weights(), ++stream);
    std::vector<float> nchw(s.inputs()), w(weight.begin(), weight.end()), ones(s.OC, 1.0f);
    for (i64 n = 0; n < s.N; ++n)
      for (i64 c = 0; c < s.C; ++c)
        for (i64 p = 0; p < s.H * s.W; ++p) nchw[(n * s.C + c) * s.H * s.W + p] = inp[(n * s.H * s.W + p) * s.C + c];
    std::vector<float> conv(s.outputs()), actual(s.outputs());
    // integer sums below 2^24: the float convolution is exact, and so is one fma with scale 1
    reference::conv2d_forward<float>(conv.data(), nchw.data(), w.data(), nullptr, s.N, s.C, s.H, s.W, s.OC, s.KH,
                                     s.KW, s.stride, s.pad);
    reference::int8_conv2d_forward(actual.data(), inp.data(), weight.data(), 1.0f, ones.data(), nullptr, s.N, s.C, s.H,
                                   s.W, s.OC, s.KH, s.KW, s.stride, s.pad);
    const i64 HW = s.OH() * s.OW();
    for (i64 n = 0; n < s.N; ++n)
      for (i64 o = 0; o < s.OC; ++o)
        for (i64 p = 0; p < HW; ++p)
          ASSERT_EQ(actual[(n * HW + p) * s.OC + o], conv[(n * s.OC + o) * HW + p])
              << s << " image " << n << " channel " << o << " pixel " << p;
  }
}

TEST(Int8Conv2d, CpuEqualsReferenceBitForBit) {
  std::uint64_t stream = 100;
  for (const ConvShape& s : kShapes) {
    const auto inp = random_int8(kSeed, s.inputs(), ++stream), weight = random_int8(kSeed, s.weights(), ++stream);
    auto weight_scale = random_floats(kSeed, s.OC, ++stream, 1e-3);
    for (float& w : weight_scale) w = std::abs(w) + 1e-5f;
    const auto bias = random_floats(kSeed, s.OC, ++stream, 1.0);
    expect_cpu_equals_reference(s, inp, weight, weight_scale, bias.data());
    expect_cpu_equals_reference(s, inp, weight, weight_scale, nullptr);
  }
}

TEST(Int8Conv2d, SaturatedOperandsSumExactly) {
  const ConvShape s{2, 64, 7, 7, 64, 3, 3, 1, 1};  // 576 products of ±127² in one sum
  const std::vector<float> weight_scale(s.OC, 1.0f);
  for (const std::int8_t a : {std::int8_t{127}, std::int8_t{-127}}) {
    const std::vector<std::int8_t> inp(s.inputs(), a), weight(s.weights(), -127);
    expect_cpu_equals_reference(s, inp, weight, weight_scale, nullptr);
  }
}

// oneDNN's primitive keeps the weights reordered into its layout: a weight tensor changed in
// place (or a new one at the same address) must be reordered again, not served stale.
TEST(Int8Conv2d, WeightsChangedInPlaceAreUsedAsChanged) {
  const ConvShape s{2, 16, 10, 10, 16, 3, 3, 1, 1};
  const auto inp = random_int8(kSeed, s.inputs(), 301);
  auto weight = random_int8(kSeed, s.weights(), 302);
  const std::vector<float> weight_scale(s.OC, 0.01f);
  expect_cpu_equals_reference(s, inp, weight, weight_scale, nullptr);
  weight[s.weights() / 2] = static_cast<std::int8_t>(weight[s.weights() / 2] == 5 ? 6 : 5);
  expect_cpu_equals_reference(s, inp, weight, weight_scale, nullptr);
  const auto other = random_int8(kSeed, s.weights(), 303);
  std::copy(other.begin(), other.end(), weight.begin());
  expect_cpu_equals_reference(s, inp, weight, weight_scale, nullptr);
}

// Where oneDNN runs VNNI or AMX-INT8 (this CPU, or the cap of the int8_matmul_isa_* tests)
// it sums resnet-mini's convolutions; below them it declines and the own kernel sums.
TEST(Int8Conv2d, OnednnSumsWhereItHasInt8DotProducts) {
  const ConvShape s{4, 16, 28, 28, 16, 3, 3, 1, 1};
  const auto inp = random_int8(kSeed, s.inputs(), 401), weight = random_int8(kSeed, s.weights(), 402);
  std::vector<std::int32_t> sums(s.outputs(), -1);
  const bool summed = cpu::onednn_int8_conv2d_sums(sums.data(), inp.data(), weight.data(), s.N, s.C, s.H, s.W, s.OC,
                                                   s.KH, s.KW, s.stride, s.pad);
  EXPECT_EQ(summed, onednn_has_int8_dot_products()) << "oneDNN ISA " << onednn_cpu_isa();
}

TEST(Int8Conv2d, DispatchTablesHoldTheKernel) {
  EXPECT_EQ(kernels_for(Backend::reference).int8_conv2d_forward, &reference::int8_conv2d_forward);
  EXPECT_EQ(kernels_for(Backend::cpu).int8_conv2d_forward, &cpu::int8_conv2d_forward);
}

}  // namespace
}  // namespace sb::kernels::testing
