// SPDX-License-Identifier: Apache-2.0
// The int8 layers: BatchNorm folding equals conv + eval BatchNorm; an int8 convolution over
// channels-last images (strided, padded, non-square) equals the fp32 convolution EXACTLY when inputs and
// weights lie on their quantisation grids (powers of two, so every product and sum is exact in
// float); an int8 linear stays within 3% of fp32 on normal data; the tracked bytes of the int8
// weights. On the reference and cpu back-ends. Leaves out the models (test_quantized_*).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "compress/batchnorm_folding.hpp"
#include "compress/channels_last.hpp"
#include "compress/quantized_conv2d.hpp"
#include "compress/quantized_linear.hpp"
#include "core/check.hpp"
#include "core/rng.hpp"

namespace sb::compress {
namespace {

using kernels::Backend;
using i64 = std::int64_t;

std::vector<float> normal_values(i64 n, std::uint64_t stream, double std) {
  const CounterRng rng(11, stream);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<float>(std * rng.normal(i));
  return v;
}

// n values q·scale, q uniform in [-127, 127], with q = 127 at index 0 so that max|x| = 127·scale.
std::vector<float> grid_values(i64 n, std::uint64_t stream, float scale) {
  const CounterRng rng(12, stream);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = (static_cast<float>(rng.below(i, 255)) - 127.0f) * scale;
  v[0] = 127.0f * scale;
  return v;
}

class QuantizedLayers : public ::testing::TestWithParam<Backend> {
 protected:
  const kernels::KernelTable& k() const { return kernels::kernels_for(GetParam()); }
  MemoryTracker tracker_;
};

TEST_P(QuantizedLayers, BatchNormFoldingEqualsConvThenEvalBatchNorm) {
  const i64 N = 2, C = 3, H = 6, W = 5, OC = 4, KS = 3, K = C * KS * KS;
  const auto x = normal_values(N * C * H * W, 1, 1.0);
  const auto w = normal_values(OC * K, 2, 0.3);
  const auto gamma = normal_values(OC, 3, 1.0), beta = normal_values(OC, 4, 1.0);
  const auto mean = normal_values(OC, 5, 0.5);
  auto var = normal_values(OC, 6, 1.0);
  for (float& v : var) v = v * v + 0.1f;
  std::vector<float> conv(N * OC * H * W), expected(conv.size()), actual(conv.size());
  k().conv2d_forward(conv.data(), x.data(), w.data(), nullptr, N, C, H, W, OC, KS, KS, 1, 1);
  k().batchnorm2d_forward_eval(expected.data(), conv.data(), gamma.data(), beta.data(), mean.data(),
                               var.data(), N, OC, H * W, 1e-5);
  const FoldedConv f = fold_batchnorm(w.data(), nullptr, OC, K, gamma.data(), beta.data(),
                                      mean.data(), var.data(), 1e-5);
  k().conv2d_forward(actual.data(), x.data(), f.weight.data(), f.bias.data(), N, C, H, W, OC, KS, KS, 1, 1);
  for (std::size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], 1e-5 * (1 + std::abs(expected[i]))) << i;
}

TEST_P(QuantizedLayers, Int8ConvolutionOnTheGridEqualsFp32Exactly) {
  const Conv2dShape shapes[] = {{3, 7, 9, 5, 3, 3, 2, 1}, {4, 6, 6, 6, 1, 1, 2, 0}, {1, 5, 5, 3, 3, 3, 1, 1}};
  std::uint64_t stream = 0;
  for (const Conv2dShape& s : shapes) {
    const i64 N = 3;
    const float input_scale = 1.0f / 64;
    const auto x = grid_values(N * s.C * s.H * s.W, ++stream, input_scale);
    std::vector<float> w(s.OC * s.K()), bias(s.OC);
    for (i64 o = 0; o < s.OC; ++o) {  // channel o on the grid of 2^-(o+3)
      const float scale = std::ldexp(1.0f, -static_cast<int>(o) - 3);
      const auto row = grid_values(s.K(), ++stream, scale);
      std::copy(row.begin(), row.end(), w.begin() + o * s.K());
      bias[o] = static_cast<float>(o - 2) * 5 * input_scale * scale;
    }
    QuantizedConv2d conv("conv", s, w.data(), bias.data(), tracker_);
    const i64 out_n = N * s.outputs(), OHW = s.OH() * s.OW();
    std::vector<float> expected(out_n), calibrated(out_n, -1), quantized(out_n, -2);
    std::vector<std::int8_t> input_q(conv.input_q_bytes(N));
    std::vector<float> first_in(conv.channels_first_in_floats(N)), first_out(conv.channels_first_out_floats(N));
    const Conv2dScratch scratch{input_q.data(), first_in.data(), first_out.data()};
    std::vector<float> x_first(x.size()), expected_last(out_n);  // x is (N, H, W, C)
    to_channels_first(x_first.data(), x.data(), N, s.C, s.H * s.W);
    kernels::reference::conv2d_forward<float>(expected.data(), x_first.data(), w.data(), bias.data(), N, s.C,
                                              s.H, s.W, s.OC, s.KH, s.KW, s.stride, s.pad);
    to_channels_last(expected_last.data(), expected.data(), N, s.OC, OHW);
    EXPECT_THROW(conv.forward(quantized.data(), x.data(), N, InferenceMode::int8, scratch, k()), Error);
    conv.forward(calibrated.data(), x.data(), N, InferenceMode::calibrate, scratch, k());
    conv.gemm().finish_calibration();
    EXPECT_EQ(conv.gemm().input_scale(), input_scale);
    conv.forward(quantized.data(), x.data(), N, InferenceMode::int8, scratch, k());
    EXPECT_EQ(calibrated, expected_last) << "KH " << s.KH << " stride " << s.stride;
    EXPECT_EQ(quantized, expected_last) << "KH " << s.KH << " stride " << s.stride;
  }
}

TEST_P(QuantizedLayers, Int8LinearWithinThreePercentOfFp32AndTracksInt8Bytes) {
  const i64 BT = 64, C = 256, OC = 96;
  const auto x = normal_values(BT * C, 21, 1.0), w = normal_values(OC * C, 22, 0.02),
             b = normal_values(OC, 23, 0.1);
  QuantizedLinear linear("fc", w.data(), b.data(), OC, C, tracker_);
  EXPECT_EQ(tracker_.usage().of(MemoryCategory::params), OC * C + 8 * OC);
  EXPECT_EQ(tracker_.usage().of(MemoryCategory::workspace), 4 * OC * C);  // fp32 until calibrated
  std::vector<float> expected(BT * OC), actual(BT * OC);
  std::vector<std::int8_t> x_q(BT * C);
  linear.forward(expected.data(), x.data(), x_q.data(), BT, InferenceMode::calibrate, k());
  linear.finish_calibration();
  EXPECT_EQ(tracker_.usage().of(MemoryCategory::workspace), 0);
  EXPECT_THROW(linear.float_weight(), Error);
  linear.forward(actual.data(), x.data(), x_q.data(), BT, InferenceMode::int8, k());
  float max_ref = 0, max_err = 0;
  for (i64 i = 0; i < BT * OC; ++i) {
    max_ref = std::max(max_ref, std::abs(expected[i]));
    max_err = std::max(max_err, std::abs(actual[i] - expected[i]));
  }
  std::printf("int8 linear (%lld,%lld)x(%lld): max error %.3g of max %.3g\n", static_cast<long long>(BT),
              static_cast<long long>(C), static_cast<long long>(OC), max_err, max_ref);
  EXPECT_LT(max_err, 0.03f * max_ref);
  EXPECT_GT(max_err, 0.0f);  // it did quantise
  EXPECT_EQ(linear.stored_bytes(), OC * C + 8 * OC + 4);
  EXPECT_EQ(linear.float_bytes(), 4 * (OC * C + OC));
}

INSTANTIATE_TEST_SUITE_P(Backends, QuantizedLayers, ::testing::Values(Backend::reference, Backend::cpu),
                         [](const auto& info) { return std::string(kernels::to_string(info.param)); });

}  // namespace
}  // namespace sb::compress
