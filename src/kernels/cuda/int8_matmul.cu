// SPDX-License-Identifier: Apache-2.0
// CUDA int8 inference kernels: quantisation element-wise, and the int8 GEMM and convolution
// (NHWC) as one thread per output with an int32 sum, bit-identical to the reference. Leaves out DP4A/IMMA tensor-core
// tiles: quantised inference is measured on the CPU; this keeps the cuda table complete.
#include <cmath>

#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

SB_DECLARE_QUANTIZE_INT8 {
  for_each_index(N, [=] __device__(i64 i) {
    const float q = nearbyintf(inp[i] / scale);
    out[i] = static_cast<std::int8_t>(fminf(fmaxf(q, -127.0f), 127.0f));
  });
}

SB_DECLARE_INT8_MATMUL_FORWARD {
  for_each_index(BT * OC, [=] __device__(i64 i) {
    const i64 bt = i / OC, o = i % OC;
    const std::int8_t* inp_row = inp + bt * C;
    const std::int8_t* w_row = weight + o * C;
    std::int32_t sum = 0;
    for (i64 c = 0; c < C; ++c) sum += std::int32_t{inp_row[c]} * std::int32_t{w_row[c]};
    out[i] = fmaf(static_cast<float>(sum), inp_scale * weight_scale[o], bias ? bias[o] : 0.0f);
  });
}

SB_DECLARE_INT8_CONV2D_FORWARD {
  const i64 OH = conv2d_output_size(H, KH, stride, pad), OW = conv2d_output_size(W, KW, stride, pad);
  for_each_index(N * OH * OW * OC, [=] __device__(i64 i) {
    const i64 o = i % OC, pixel = i / OC;
    const i64 ow = pixel % OW, oh = pixel / OW % OH, n = pixel / (OW * OH);
    std::int32_t sum = 0;
    for (i64 kh = 0; kh < KH; ++kh) {
      const i64 h = oh * stride + kh - pad;
      if (h < 0 || h >= H) continue;
      for (i64 kw = 0; kw < KW; ++kw) {
        const i64 w = ow * stride + kw - pad;
        if (w < 0 || w >= W) continue;
        const std::int8_t* in_pixel = inp + ((n * H + h) * W + w) * C;
        for (i64 c = 0; c < C; ++c)
          sum += std::int32_t{in_pixel[c]} * std::int32_t{weight[((o * C + c) * KH + kh) * KW + kw]};
      }
    }
    out[i] = fmaf(static_cast<float>(sum), inp_scale * weight_scale[o], bias ? bias[o] : 0.0f);
  });
}

}  // namespace sb::kernels::cuda
