// SPDX-License-Identifier: Apache-2.0
// The per-channel weight quantiser and the activation calibration: the round trip error is at
// most half a step per element, all-zero channels, saturation at ±127 (never -128), and
// max-abs calibration. Leaves out the int8 layers (test_quantized_layers.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "compress/activation_calibration.hpp"
#include "compress/weight_quantization.hpp"
#include "core/check.hpp"
#include "core/rng.hpp"

namespace sb::compress {
namespace {

std::vector<float> normal_values(std::int64_t n, std::uint64_t stream, double std) {
  const CounterRng rng(7, stream);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[i] = static_cast<float>(std * rng.normal(i));
  return v;
}

TEST(WeightQuantization, RoundTripWithinHalfAStepPerElement) {
  const std::int64_t rows = 37, cols = 291;
  std::vector<float> w = normal_values(rows * cols, 1, 0.05);
  for (std::int64_t c = 0; c < cols; ++c) w[5 * cols + c] *= 100.0f;  // one channel 100× wider
  const ChannelQuantizedWeights q = quantize_per_channel(w.data(), rows, cols);
  const std::vector<float> back = dequantize(q);
  for (std::int64_t r = 0; r < rows; ++r) {
    float max_abs = 0;
    for (std::int64_t c = 0; c < cols; ++c) max_abs = std::max(max_abs, std::abs(w[r * cols + c]));
    EXPECT_FLOAT_EQ(q.scales[r], max_abs / 127.0f) << "row " << r;
    for (std::int64_t c = 0; c < cols; ++c) {
      const std::int64_t i = r * cols + c;
      // half a step, plus the float rounding of w/scale and of q·scale
      EXPECT_LE(std::abs(back[i] - w[i]), 0.5f * q.scales[r] * (1 + 1e-5f) + 1e-7f * max_abs)
          << "row " << r << " col " << c;
    }
  }
  // per channel: the narrow channels keep their resolution beside the wide one
  EXPECT_GT(q.scales[5], 50 * q.scales[4]);
}

TEST(WeightQuantization, ZeroChannelGetsScaleOneAndZeros) {
  std::vector<float> w = normal_values(3 * 8, 2, 1.0);
  std::fill(w.begin() + 8, w.begin() + 16, 0.0f);
  const ChannelQuantizedWeights q = quantize_per_channel(w.data(), 3, 8);
  EXPECT_EQ(q.scales[1], 1.0f);
  for (int c = 0; c < 8; ++c) EXPECT_EQ(q.values[8 + c], 0);
  const std::vector<float> back = dequantize(q);
  for (int c = 0; c < 8; ++c) EXPECT_EQ(back[8 + c], 0.0f);
}

TEST(WeightQuantization, ExtremesSaturateAtPlusMinus127) {
  const std::vector<float> w{-2.0f, 2.0f, 1.0f, -1.0f, 0.0f, 1.99f};
  const ChannelQuantizedWeights q = quantize_per_channel(w.data(), 1, 6);
  EXPECT_EQ(q.values, (std::vector<std::int8_t>{-127, 127, 64, -64, 0, 126}));  // 63.5 -> 64 (even)
  for (std::int8_t v : q.values) EXPECT_GE(v, -127);
}

TEST(WeightQuantization, NonFiniteWeightIsAnError) {
  const std::vector<float> w{1.0f, NAN};
  EXPECT_THROW(quantize_per_channel(w.data(), 1, 2), Error);
}

TEST(ActivationCalibration, MaxAbsOverBatches) {
  ActivationRange range;
  EXPECT_FALSE(range.observed());
  EXPECT_THROW(range.scale(), Error);
  const std::vector<float> a{0.5f, -3.0f, 1.0f}, b{2.0f, -0.25f};
  range.observe(a.data(), 3);
  range.observe(b.data(), 2);
  EXPECT_EQ(range.max_abs(), 3.0f);
  EXPECT_FLOAT_EQ(range.scale(), 3.0f / 127.0f);
  const std::vector<float> bad{1.0f, INFINITY};
  EXPECT_THROW(range.observe(bad.data(), 2), Error);
  ActivationRange zeros;
  const std::vector<float> z(4, 0.0f);
  zeros.observe(z.data(), 4);
  EXPECT_EQ(zeros.scale(), 1.0f);
}

}  // namespace
}  // namespace sb::compress
