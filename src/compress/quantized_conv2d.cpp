// SPDX-License-Identifier: Apache-2.0
// int8 convolution by im2col + int8 GEMM (see quantized_conv2d.hpp).
#include "compress/quantized_conv2d.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace sb::compress {

QuantizedConv2d::QuantizedConv2d(std::string name, const Conv2dShape& shape, const float* weight,
                                 const float* bias, MemoryTracker& tracker)
    : shape_(shape), gemm_(std::move(name), weight, bias, shape.OC, shape.K(), tracker) {
  SB_CHECK(shape.OH() > 0 && shape.OW() > 0, "QuantizedConv2d '{}': empty output", gemm_.name());
}

namespace {

// One (padded) image (C, HP, WP) -> rows (OH·OW, C·KS·KS), a KS × KS kernel known at compile
// time, so that each tap row is a fixed run of byte copies.
template <int KS>
void unfold_image(std::int8_t* rows, const std::int8_t* image, std::int64_t OH, std::int64_t OW,
                  std::int64_t C, std::int64_t HP, std::int64_t WP, std::int64_t stride) {
  for (std::int64_t oh = 0; oh < OH; ++oh)
    for (std::int64_t ow = 0; ow < OW; ++ow) {
      const std::int8_t* corner = image + oh * stride * WP + ow * stride;
      for (std::int64_t c = 0; c < C; ++c) {
        const std::int8_t* plane = corner + c * HP * WP;
        for (int kh = 0; kh < KS; ++kh)
          for (int kw = 0; kw < KS; ++kw) *rows++ = plane[kh * WP + kw];
      }
    }
}

}  // namespace

void im2col_int8(std::int8_t* columns, std::int8_t* padded, const std::int8_t* inp, std::int64_t N,
                 const Conv2dShape& s) {
  const std::int64_t OH = s.OH(), OW = s.OW(), K = s.K();
  const std::int64_t HP = s.H + 2 * s.pad, WP = s.W + 2 * s.pad;
  if (s.pad > 0) std::fill(padded, padded + s.C * HP * WP, std::int8_t{0});
  for (std::int64_t n = 0; n < N; ++n) {
    const std::int8_t* image = inp + n * s.C * s.H * s.W;
    if (s.pad > 0) {  // the border stays zero: only the interior is rewritten per image
      for (std::int64_t c = 0; c < s.C; ++c)
        for (std::int64_t h = 0; h < s.H; ++h)
          std::copy_n(image + (c * s.H + h) * s.W, s.W, padded + (c * HP + h + s.pad) * WP + s.pad);
      image = padded;
    }
    std::int8_t* rows = columns + n * OH * OW * K;
    if (s.KH == 3 && s.KW == 3) {
      unfold_image<3>(rows, image, OH, OW, s.C, HP, WP, s.stride);
    } else if (s.KH == 1 && s.KW == 1) {
      unfold_image<1>(rows, image, OH, OW, s.C, HP, WP, s.stride);
    } else {
      for (std::int64_t oh = 0; oh < OH; ++oh)
        for (std::int64_t ow = 0; ow < OW; ++ow) {
          const std::int8_t* corner = image + oh * s.stride * WP + ow * s.stride;
          for (std::int64_t c = 0; c < s.C; ++c)
            for (std::int64_t kh = 0; kh < s.KH; ++kh) {
              const std::int8_t* src = corner + (c * HP + kh) * WP;
              for (std::int64_t kw = 0; kw < s.KW; ++kw) *rows++ = src[kw];
            }
        }
    }
  }
}

void QuantizedConv2d::forward(float* out, const float* inp, std::int64_t N, InferenceMode mode,
                              const Conv2dScratch& scratch, const kernels::KernelTable& k) {
  const Conv2dShape& s = shape_;
  if (mode == InferenceMode::calibrate) {
    gemm_.input_range().observe(inp, N * s.C * s.H * s.W);
    k.conv2d_forward(out, inp, gemm_.float_weight(), gemm_.bias(), N, s.C, s.H, s.W, s.OC, s.KH,
                     s.KW, s.stride, s.pad);
    return;
  }
  k.quantize_int8(scratch.input_q, inp, gemm_.input_scale(), N * s.C * s.H * s.W);
  im2col_int8(scratch.columns, scratch.padded, scratch.input_q, N, s);
  const std::int64_t HW = s.OH() * s.OW();
  gemm_.forward_int8(scratch.rows_out, scratch.columns, N * HW, k);
  // (N·OH·OW, OC) -> (N, OC, OH·OW)
  for (std::int64_t n = 0; n < N; ++n) {
    const float* rows = scratch.rows_out + n * HW * s.OC;
    float* image = out + n * s.OC * HW;
    for (std::int64_t p = 0; p < HW; ++p)
      for (std::int64_t o = 0; o < s.OC; ++o) image[o * HW + p] = rows[p * s.OC + o];
  }
}

}  // namespace sb::compress
