// SPDX-License-Identifier: Apache-2.0
// The int8 inference convolution (NHWC) on the host: the int32 sums from oneDNN's VNNI or AMX
// convolution where it has one (onednn_int8_conv2d.hpp), otherwise from the int8 GEMM over the
// images unfolded into rows (im2col); either way dequantised with the reference's fma, so the
// result is the reference's bit for bit.
#include <vector>

#include "kernels/cpu/host_parallel.hpp"
#include "kernels/cpu/int8_dequantise.hpp"
#include "kernels/cpu/onednn_int8_conv2d.hpp"

namespace sb::kernels::cpu {

namespace {

// inp (N,H,W,C) -> rows (N·OH·OW, C·KH·KW) in the weight's (c, kh, kw) order, zeros where the
// receptive field overlaps the padding.
void unfold(std::int8_t* rows, const std::int8_t* inp, i64 N, i64 C, i64 H, i64 W, i64 KH, i64 KW, i64 stride,
            i64 pad, i64 OH, i64 OW) {
  const i64 K = C * KH * KW;
  parallel_for_each("sb::int8_conv2d_forward::unfold", N * OH, [=](i64 row_of_pixels) {
    const i64 n = row_of_pixels / OH, oh = row_of_pixels % OH;
    for (i64 ow = 0; ow < OW; ++ow) {
      std::int8_t* row = rows + (row_of_pixels * OW + ow) * K;
      for (i64 kh = 0; kh < KH; ++kh) {
        const i64 h = oh * stride + kh - pad;
        for (i64 kw = 0; kw < KW; ++kw) {
          const i64 w = ow * stride + kw - pad;
          const bool inside = h >= 0 && h < H && w >= 0 && w < W;
          const std::int8_t* pixel = inp + ((n * H + h) * W + w) * C;
          for (i64 c = 0; c < C; ++c) row[(c * KH + kh) * KW + kw] = inside ? pixel[c] : std::int8_t{0};
        }
      }
    }
  });
}

}  // namespace

SB_DECLARE_INT8_CONV2D_FORWARD {
  const i64 OH = conv2d_output_size(H, KH, stride, pad), OW = conv2d_output_size(W, KW, stride, pad);
  const i64 pixels = N * OH * OW;
  if (pixels <= 0 || OC == 0) return;
  thread_local std::vector<std::int32_t> sums;
  if (C > 0 && static_cast<i64>(sums.size()) < pixels * OC) sums.resize(static_cast<std::size_t>(pixels * OC));
  if (C > 0 && onednn_int8_conv2d_sums(sums.data(), inp, weight, N, C, H, W, OC, KH, KW, stride, pad)) {
    dequantise_rows(out, sums.data(), inp_scale, weight_scale, bias, pixels, OC);
    return;
  }
  thread_local std::vector<std::int8_t> rows;
  const i64 K = C * KH * KW;
  if (static_cast<i64>(rows.size()) < pixels * K) rows.resize(static_cast<std::size_t>(pixels * K));
  unfold(rows.data(), inp, N, C, H, W, KH, KW, stride, pad, OH, OW);
  int8_matmul_forward(out, rows.data(), weight, inp_scale, weight_scale, bias, pixels, K, OC);
}

}  // namespace sb::kernels::cpu
