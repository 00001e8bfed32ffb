// SPDX-License-Identifier: Apache-2.0
// A convolution's data gradient from oneDNN's channel-blocked fp32 layout (nChw16c: per image,
// 16 channels interleaved per pixel, channels padded to a multiple of 16) added into the
// model's NCHW tensor: each value widened, summed with the fp32 gradient and rounded once to
// the tensor's type. What the bf16 convolutions' dinp += needs, in one pass over the two
// operands, where oneDNN's reorder with a sum post-op took three times as long. Leaves out
// other block sizes (the caller falls back to oneDNN's reorder) and nhwc.
#pragma once

#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"

namespace sb::kernels::cpu {

// Channels per block of the layout add_blocked_channels reads.
inline constexpr i64 kChannelBlock = 16;

// dst (N,C,HW) += src (N, ceil(C/16), HW, 16), in float, rounded once to dst's type; src's
// padded channels are ignored.
void add_blocked_channels(float* dst, const float* src, i64 N, i64 C, i64 HW);
void add_blocked_channels(bf16* dst, const float* src, i64 N, i64 C, i64 HW);

}  // namespace sb::kernels::cpu
