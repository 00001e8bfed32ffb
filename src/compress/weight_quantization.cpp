// SPDX-License-Identifier: Apache-2.0
// Per-channel symmetric weight quantisation (see weight_quantization.hpp).
#include "compress/weight_quantization.hpp"

#include <algorithm>
#include <cmath>

#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::compress {

ChannelQuantizedWeights quantize_per_channel(const float* w, std::int64_t rows, std::int64_t cols) {
  SB_CHECK(rows >= 0 && cols >= 0, "quantize_per_channel: shape ({}, {})", rows, cols);
  ChannelQuantizedWeights q;
  q.rows = rows;
  q.cols = cols;
  q.values.resize(static_cast<std::size_t>(rows * cols));
  q.scales.resize(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * cols;
    float max_abs = 0.0f;
    bool finite = true;
    for (std::int64_t c = 0; c < cols; ++c) {
      finite = finite && std::isfinite(row[c]);
      max_abs = std::max(max_abs, std::abs(row[c]));
    }
    SB_CHECK(finite, "quantize_per_channel: row {} holds a non-finite weight", r);
    q.scales[r] = max_abs > 0.0f ? max_abs / kInt8Max : 1.0f;
    kernels::reference::quantize_int8(q.values.data() + r * cols, row, q.scales[r], cols);
  }
  return q;
}

std::vector<float> dequantize(const ChannelQuantizedWeights& q) {
  std::vector<float> w(q.values.size());
  for (std::int64_t r = 0; r < q.rows; ++r)
    for (std::int64_t c = 0; c < q.cols; ++c)
      w[r * q.cols + c] = static_cast<float>(q.values[r * q.cols + c]) * q.scales[r];
  return w;
}

}  // namespace sb::compress
