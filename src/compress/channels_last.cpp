// SPDX-License-Identifier: Apache-2.0
#include "compress/channels_last.hpp"

namespace sb::compress {

void to_channels_last(float* out, const float* inp, std::int64_t N, std::int64_t C, std::int64_t HW) {
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c) {
      const float* plane = inp + (n * C + c) * HW;
      float* column = out + n * HW * C + c;
      for (std::int64_t p = 0; p < HW; ++p) column[p * C] = plane[p];
    }
}

void to_channels_first(float* out, const float* inp, std::int64_t N, std::int64_t C, std::int64_t HW) {
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t p = 0; p < HW; ++p) {
      const float* pixel = inp + (n * HW + p) * C;
      float* column = out + n * C * HW + p;
      for (std::int64_t c = 0; c < C; ++c) column[c * HW] = pixel[c];
    }
}

}  // namespace sb::compress
