// SPDX-License-Identifier: Apache-2.0
// Reference 2-D convolution (NCHW, zero padding): the direct loops over every output and tap,
// the ground truth for the im2col + sgemm version. Leaves out dilation, groups and threading.
#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

namespace {

// OH (or OW) of a convolution, after refusing what PyTorch refuses: a kernel larger than the
// padded input, a stride below one, negative padding.
i64 conv2d_output_extent(const char* label, i64 in, i64 kernel, i64 stride, i64 pad) {
  SB_CHECK(in >= 1 && kernel >= 1 && stride >= 1 && pad >= 0 && in + 2 * pad >= kernel,
           "{}: input extent {} with kernel {}, stride {}, padding {} has no output", label, in,
           kernel, stride, pad);
  return (in + 2 * pad - kernel) / stride + 1;
}

}  // namespace

// out[n,o,y,x] = bias[o] + sum over c, kh, kw of inp[n,c,y·stride-pad+kh, x·stride-pad+kw] ·
// weight[o,c,kh,kw], taps outside the input reading zero.
template <class T>
SB_DECLARE_CONV2D_FORWARD(T, T) {
  const i64 OH = conv2d_output_extent("conv2d_forward", H, KH, stride, pad);
  const i64 OW = conv2d_output_extent("conv2d_forward", W, KW, stride, pad);
  for (i64 n = 0; n < N; ++n)
    for (i64 o = 0; o < OC; ++o)
      for (i64 y = 0; y < OH; ++y)
        for (i64 x = 0; x < OW; ++x) {
          T sum = bias ? bias[o] : T(0);
          for (i64 c = 0; c < C; ++c)
            for (i64 kh = 0; kh < KH; ++kh) {
              const i64 ih = y * stride - pad + kh;
              if (ih < 0 || ih >= H) continue;
              for (i64 kw = 0; kw < KW; ++kw) {
                const i64 iw = x * stride - pad + kw;
                if (iw < 0 || iw >= W) continue;
                sum += inp[((n * C + c) * H + ih) * W + iw] *
                       weight[((o * C + c) * KH + kh) * KW + kw];
              }
            }
          out[((n * OC + o) * OH + y) * OW + x] = sum;
        }
}

// The three gradients as three plain loops. dbias and dweight are sums over the whole batch
// (N·OH·OW terms), accumulated in double so that reference<float> stays a ground truth for
// them; dinp gathers at most OC·KH·KW terms per element and is scattered in T.
template <class T>
SB_DECLARE_CONV2D_BACKWARD(T, T) {
  const i64 OH = conv2d_output_extent("conv2d_backward", H, KH, stride, pad);
  const i64 OW = conv2d_output_extent("conv2d_backward", W, KW, stride, pad);
  auto dout_at = [&](i64 n, i64 o, i64 y, i64 x) { return dout[((n * OC + o) * OH + y) * OW + x]; };
  if (dbias) {
    for (i64 o = 0; o < OC; ++o) {
      double sum = 0;
      for (i64 n = 0; n < N; ++n)
        for (i64 y = 0; y < OH; ++y)
          for (i64 x = 0; x < OW; ++x) sum += dout_at(n, o, y, x);
      dbias[o] += static_cast<T>(sum);
    }
  }
  for (i64 o = 0; o < OC; ++o)
    for (i64 c = 0; c < C; ++c)
      for (i64 kh = 0; kh < KH; ++kh)
        for (i64 kw = 0; kw < KW; ++kw) {
          double sum = 0;
          for (i64 n = 0; n < N; ++n)
            for (i64 y = 0; y < OH; ++y) {
              const i64 ih = y * stride - pad + kh;
              if (ih < 0 || ih >= H) continue;
              for (i64 x = 0; x < OW; ++x) {
                const i64 iw = x * stride - pad + kw;
                if (iw < 0 || iw >= W) continue;
                sum += static_cast<double>(dout_at(n, o, y, x)) *
                       static_cast<double>(inp[((n * C + c) * H + ih) * W + iw]);
              }
            }
          dweight[((o * C + c) * KH + kh) * KW + kw] += static_cast<T>(sum);
        }
  if (!dinp) return;
  for (i64 n = 0; n < N; ++n)
    for (i64 o = 0; o < OC; ++o)
      for (i64 y = 0; y < OH; ++y)
        for (i64 x = 0; x < OW; ++x) {
          const T d = dout_at(n, o, y, x);
          for (i64 c = 0; c < C; ++c)
            for (i64 kh = 0; kh < KH; ++kh) {
              const i64 ih = y * stride - pad + kh;
              if (ih < 0 || ih >= H) continue;
              for (i64 kw = 0; kw < KW; ++kw) {
                const i64 iw = x * stride - pad + kw;
                if (iw < 0 || iw >= W) continue;
                dinp[((n * C + c) * H + ih) * W + iw] +=
                    d * weight[((o * C + c) * KH + kh) * KW + kw];
              }
            }
        }
}

template SB_DECLARE_CONV2D_FORWARD(float, float);
template SB_DECLARE_CONV2D_FORWARD(double, double);
template SB_DECLARE_CONV2D_BACKWARD(float, float);
template SB_DECLARE_CONV2D_BACKWARD(double, double);

}  // namespace sb::kernels::reference
