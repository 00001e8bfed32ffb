// SPDX-License-Identifier: Apache-2.0
// Per-output-channel symmetric int8 quantisation of a weight matrix: scale = max|w| / 127 per
// row, q = round(w / scale) in [-127, 127], zero point 0. Leaves out asymmetric and per-group
// schemes and the activations (activation_calibration.hpp).
#pragma once

#include <cstdint>
#include <vector>

namespace sb::compress {

inline constexpr float kInt8Max = 127.0f;

struct ChannelQuantizedWeights {
  std::int64_t rows = 0, cols = 0;  // OC, K = C·KH·KW for a convolution
  std::vector<std::int8_t> values;  // (OC, K)
  std::vector<float> scales;        // (OC) max|w_row| / 127; 1 for an all-zero row
};

// w (rows, cols) float -> its per-row quantisation. A row of zeros gets scale 1 (any scale
// represents it exactly), so the dequantisation never divides by zero. Uses the reference
// quantiser (kernels.hpp: nearbyint, clamp to ±127).
ChannelQuantizedWeights quantize_per_channel(const float* w, std::int64_t rows, std::int64_t cols);

// q (rows, cols) · scales -> float (rows, cols): what the int8 GEMM multiplies by in effect.
std::vector<float> dequantize(const ChannelQuantizedWeights& q);

}  // namespace sb::compress
