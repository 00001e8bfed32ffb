// SPDX-License-Identifier: Apache-2.0
// The model's NCHW tensors and oneDNN's channel-blocked fp32 layout (nChw16c: per image, 16
// channels interleaved per pixel, channels padded to a multiple of 16), converted in one pass:
// - a convolution's data gradient added into the model's tensor (dinp +=): each value widened,
//   summed with the fp32 gradient and rounded once to the tensor's type, where oneDNN's reorder
//   with a sum post-op took three times as long;
// - fp16 operands laid out for an fp32 convolution and its fp32 result narrowed back, the
//   widening or narrowing in the same pass (oneDNN 2.6 reorders f16 only with its reference
//   code), where widening into scratch and reordering took two passes.
// Leaves out other block sizes (the callers fall back to oneDNN's reorders) and nhwc.
#pragma once

#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::cpu {

// Channels per block of the blocked layout.
inline constexpr i64 kChannelBlock = 16;

// dst (N,C,HW) += src (N, ceil(C/16), HW, 16), in float, rounded once to dst's type; src's
// padded channels are ignored.
void add_blocked_channels(float* dst, const float* src, i64 N, i64 C, i64 HW);
void add_blocked_channels(bf16* dst, const float* src, i64 N, i64 C, i64 HW);
void add_blocked_channels(fp16* dst, const float* src, i64 N, i64 C, i64 HW);

// dst (N, ceil(C/16), HW, 16) = src (N,C,HW) widened; the padded channels are zero.
void to_blocked_channels(float* dst, const fp16* src, i64 N, i64 C, i64 HW);
// dst (N,C,HW) = src (N, ceil(C/16), HW, 16) rounded to fp16 (OVERWRITTEN).
void from_blocked_channels(fp16* dst, const float* src, i64 N, i64 C, i64 HW);

}  // namespace sb::kernels::cpu
