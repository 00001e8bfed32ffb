// SPDX-License-Identifier: Apache-2.0
// CUDA 2-D convolution (NCHW, zero padding), direct: one thread per output element, per
// weight-gradient element (summed in double, as the reference) and per input-gradient
// element (gathered, so no atomics). Leaves out implicit GEMM / cuDNN, the fast path for
// large layers (a later slice).
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

i64 conv2d_output_extent(const char* label, i64 in, i64 kernel, i64 stride, i64 pad) {
  SB_CHECK(in >= 1 && kernel >= 1 && stride >= 1 && pad >= 0 && in + 2 * pad >= kernel,
           "{}: input extent {} with kernel {}, stride {}, padding {} has no output", label, in,
           kernel, stride, pad);
  return (in + 2 * pad - kernel) / stride + 1;
}

}  // namespace

SB_DECLARE_CONV2D_FORWARD(float, float) {
  const i64 OH = conv2d_output_extent("conv2d_forward", H, KH, stride, pad);
  const i64 OW = conv2d_output_extent("conv2d_forward", W, KW, stride, pad);
  for_each_index(N * OC * OH * OW, [=] __device__(i64 index) {
    const i64 x = index % OW, y = (index / OW) % OH, o = (index / (OW * OH)) % OC;
    const i64 n = index / (OW * OH * OC);
    float sum = bias ? bias[o] : 0.0f;
    for (i64 c = 0; c < C; ++c)
      for (i64 kh = 0; kh < KH; ++kh) {
        const i64 ih = y * stride - pad + kh;
        if (ih < 0 || ih >= H) continue;
        for (i64 kw = 0; kw < KW; ++kw) {
          const i64 iw = x * stride - pad + kw;
          if (iw < 0 || iw >= W) continue;
          sum += inp[((n * C + c) * H + ih) * W + iw] * weight[((o * C + c) * KH + kh) * KW + kw];
        }
      }
    out[index] = sum;
  });
}

SB_DECLARE_CONV2D_BACKWARD(float, float) {
  const i64 OH = conv2d_output_extent("conv2d_backward", H, KH, stride, pad);
  const i64 OW = conv2d_output_extent("conv2d_backward", W, KW, stride, pad);
  if (dbias) {
    for_each_index(OC, [=] __device__(i64 o) {
      double sum = 0.0;
      for (i64 n = 0; n < N; ++n)
        for (i64 p = 0; p < OH * OW; ++p) sum += dout[(n * OC + o) * OH * OW + p];
      dbias[o] += static_cast<float>(sum);
    });
  }
  for_each_index(OC * C * KH * KW, [=] __device__(i64 index) {
    const i64 kw = index % KW, kh = (index / KW) % KH, c = (index / (KW * KH)) % C;
    const i64 o = index / (KW * KH * C);
    double sum = 0.0;
    for (i64 n = 0; n < N; ++n)
      for (i64 y = 0; y < OH; ++y) {
        const i64 ih = y * stride - pad + kh;
        if (ih < 0 || ih >= H) continue;
        for (i64 x = 0; x < OW; ++x) {
          const i64 iw = x * stride - pad + kw;
          if (iw < 0 || iw >= W) continue;
          sum += static_cast<double>(dout[((n * OC + o) * OH + y) * OW + x]) *
                 static_cast<double>(inp[((n * C + c) * H + ih) * W + iw]);
        }
      }
    dweight[index] += static_cast<float>(sum);
  });
  if (!dinp) return;
  // Input (ih, iw) meets tap (kh, kw) of output (y, x) where y·stride - pad + kh = ih.
  for_each_index(N * C * H * W, [=] __device__(i64 index) {
    const i64 iw = index % W, ih = (index / W) % H, c = (index / (W * H)) % C;
    const i64 n = index / (W * H * C);
    float sum = 0.0f;
    for (i64 o = 0; o < OC; ++o)
      for (i64 kh = 0; kh < KH; ++kh) {
        const i64 y_stride = ih + pad - kh;
        if (y_stride < 0 || y_stride % stride != 0 || y_stride / stride >= OH) continue;
        const i64 y = y_stride / stride;
        for (i64 kw = 0; kw < KW; ++kw) {
          const i64 x_stride = iw + pad - kw;
          if (x_stride < 0 || x_stride % stride != 0 || x_stride / stride >= OW) continue;
          const i64 x = x_stride / stride;
          sum += dout[((n * OC + o) * OH + y) * OW + x] * weight[((o * C + c) * KH + kh) * KW + kw];
        }
      }
    dinp[index] += sum;
  });
}

}  // namespace sb::kernels::cuda
