// SPDX-License-Identifier: Apache-2.0
#include "compress/channels_last.hpp"

namespace sb::compress {

namespace {

// inp: N matrices (rows, cols) -> out: N matrices (cols, rows), each transposed.
void transpose_each(float* out, const float* inp, std::int64_t N, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t n = 0; n < N; ++n) {
    const float* matrix = inp + n * rows * cols;
    float* transposed = out + n * rows * cols;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) transposed[c * rows + r] = matrix[r * cols + c];
  }
}

}  // namespace

void to_channels_last(float* out, const float* inp, std::int64_t N, std::int64_t C, std::int64_t HW) {
  transpose_each(out, inp, N, C, HW);
}

void to_channels_first(float* out, const float* inp, std::int64_t N, std::int64_t C, std::int64_t HW) {
  transpose_each(out, inp, N, HW, C);
}

}  // namespace sb::compress
