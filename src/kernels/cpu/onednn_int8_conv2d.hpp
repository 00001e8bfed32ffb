// SPDX-License-Identifier: Apache-2.0
// The int32 sums of the int8 inference convolution (NHWC) on oneDNN convolution primitives with
// int8 dot-product instructions (AVX512-VNNI, AVX-VNNI, AMX-INT8): what cpu::int8_conv2d_forward
// sums with where oneDNN has them, before it dequantises as the reference does. A primitive is
// created once per shape; the weights are reordered into its layout (with the compensation its
// signed input needs) once per weight tensor and reused while the tensor's bytes stay the same.
// Leaves out oneDNN's int8 paths without VNNI, whose 16-bit intermediate sums saturate, and its
// gemm-based convolutions: the own kernel (int8_conv2d.cpp) sums there.
#pragma once

#include <cstdint>

namespace sb::kernels::cpu {

using i64 = std::int64_t;

// acc (N,OH,OW,OC) = the int32 sums of int8_conv2d_forward (kernels.hpp): inp (N,H,W,C), weight
// (OC,C,KH,KW), zero padding `pad`, square stride (OVERWRITTEN). Returns false, writing nothing,
// where oneDNN's kernel for the shape runs no int8 dot-product instructions (or the capped ISA,
// ONEDNN_MAX_CPU_ISA, has none): the caller sums with its own kernel then.
bool onednn_int8_conv2d_sums(std::int32_t* acc, const std::int8_t* inp, const std::int8_t* weight, i64 N, i64 C,
                             i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride, i64 pad);

}  // namespace sb::kernels::cpu
