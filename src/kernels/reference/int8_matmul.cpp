// SPDX-License-Identifier: Apache-2.0
// Reference int8 inference kernels: per-tensor symmetric quantisation, and the int8 × int8 →
// int32 product and convolution dequantised to float, as plain loops; the ground truth the cpu
// and cuda kernels must match bit for bit. Leaves out blocking, widening and threading.
#include <algorithm>
#include <cmath>

#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

SB_DECLARE_QUANTIZE_INT8 {
  for (i64 i = 0; i < N; ++i) {
    const float q = std::nearbyint(inp[i] / scale);
    out[i] = static_cast<std::int8_t>(std::clamp(q, -127.0f, 127.0f));
  }
}

SB_DECLARE_INT8_MATMUL_FORWARD {
  for (i64 bt = 0; bt < BT; ++bt) {
    const std::int8_t* inp_row = inp + bt * C;
    for (i64 o = 0; o < OC; ++o) {
      const std::int8_t* w_row = weight + o * C;
      std::int32_t sum = 0;
      for (i64 c = 0; c < C; ++c) sum += std::int32_t{inp_row[c]} * std::int32_t{w_row[c]};
      out[bt * OC + o] =
          std::fma(static_cast<float>(sum), inp_scale * weight_scale[o], bias ? bias[o] : 0.0f);
    }
  }
}

SB_DECLARE_INT8_CONV2D_FORWARD {
  const i64 OH = conv2d_output_size(H, KH, stride, pad), OW = conv2d_output_size(W, KW, stride, pad);
  for (i64 n = 0; n < N; ++n)
    for (i64 oh = 0; oh < OH; ++oh)
      for (i64 ow = 0; ow < OW; ++ow)
        for (i64 o = 0; o < OC; ++o) {
          std::int32_t sum = 0;
          for (i64 c = 0; c < C; ++c)
            for (i64 kh = 0; kh < KH; ++kh)
              for (i64 kw = 0; kw < KW; ++kw) {
                const i64 h = oh * stride + kh - pad, w = ow * stride + kw - pad;
                if (h < 0 || h >= H || w < 0 || w >= W) continue;
                sum += std::int32_t{inp[((n * H + h) * W + w) * C + c]} *
                       std::int32_t{weight[((o * C + c) * KH + kh) * KW + kw]};
              }
          out[((n * OH + oh) * OW + ow) * OC + o] =
              std::fma(static_cast<float>(sum), inp_scale * weight_scale[o], bias ? bias[o] : 0.0f);
        }
}

}  // namespace sb::kernels::reference
