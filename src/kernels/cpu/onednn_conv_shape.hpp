// SPDX-License-Identifier: Apache-2.0
// A 2-D convolution's extents as oneDNN's primitives take them (NCHW dims, square stride, zero
// padding on both sides): shared by the fp32/bf16 convolutions (onednn_conv2d.cpp) and the int8
// one (onednn_int8_conv2d.cpp). Leaves out layouts and data types (each primitive's own).
#pragma once

#include <dnnl.hpp>

#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::cpu {

struct ConvShape {
  using dims = dnnl::memory::dims;
  i64 N, C, H, W, OC, KH, KW, stride, pad;
  i64 OH() const { return (H + 2 * pad - KH) / stride + 1; }
  i64 OW() const { return (W + 2 * pad - KW) / stride + 1; }
  dims src() const { return {N, C, H, W}; }
  dims weights() const { return {OC, C, KH, KW}; }
  dims dst() const { return {N, OC, OH(), OW()}; }
  dims strides() const { return {stride, stride}; }
  dims padding_l() const { return {pad, pad}; }
  // The right padding that makes oneDNN's output extent ours exactly: pad, less the rows the
  // stride leaves unread (at most stride - 1).
  dims padding_r() const {
    return {(OH() - 1) * stride + KH - H - pad, (OW() - 1) * stride + KW - W - pad};
  }
};

// The shape, checked to have an output; `kernel` names the caller in the error.
inline ConvShape checked_shape(const char* kernel, i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW,
                               i64 stride, i64 pad) {
  const ConvShape s{N, C, H, W, OC, KH, KW, stride, pad};
  SB_CHECK(N > 0 && C > 0 && OC > 0 && KH > 0 && KW > 0 && stride > 0 && pad >= 0 && H + 2 * pad >= KH &&
               W + 2 * pad >= KW,
           "oneDNN {}: N={} C={} H={} W={} OC={} kernel {}x{} stride {} padding {} has no output", kernel, N, C, H,
           W, OC, KH, KW, stride, pad);
  return s;
}

}  // namespace sb::kernels::cpu
