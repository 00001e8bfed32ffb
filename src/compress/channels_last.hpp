// SPDX-License-Identifier: Apache-2.0
// Images between the trained model's channels-first layout (N, C, H·W) and the channels-last
// layout (N, H·W, C) that int8 inference runs in (kernels.hpp int8_conv2d_forward). Leaves out
// anything but the copy.
#pragma once

#include <cstdint>

namespace sb::compress {

// inp (N, C, HW) -> out (N, HW, C)   (OVERWRITTEN; out and inp do not overlap)
void to_channels_last(float* out, const float* inp, std::int64_t N, std::int64_t C, std::int64_t HW);
// inp (N, HW, C) -> out (N, C, HW)   (OVERWRITTEN; out and inp do not overlap)
void to_channels_first(float* out, const float* inp, std::int64_t N, std::int64_t C, std::int64_t HW);

}  // namespace sb::compress
