// SPDX-License-Identifier: Apache-2.0
// The int32 sums of the int8 inference GEMM on oneDNN matmul primitives with int8 dot-product
// instructions (AVX512-VNNI, AVX-VNNI, AMX-INT8), created once per shape and reused, the
// operands described by strides (nothing reordered): what cpu::int8_matmul_forward sums with
// where oneDNN has them, before it dequantises as the reference does. Leaves out oneDNN's int8
// paths without VNNI, whose 16-bit intermediate sums (vpmaddubsw) saturate: the own kernel
// (int8_matmul.cpp) sums exactly there.
#pragma once

#include <cstdint>

namespace sb::kernels::cpu {

using i64 = std::int64_t;

// acc (BT,OC) = inp (BT,C) · weight (OC,C)^T as exact int32 sums (OVERWRITTEN). Returns false,
// writing nothing, where oneDNN runs no int8 dot-product instructions (or the capped ISA,
// ONEDNN_MAX_CPU_ISA, has none): the caller sums with its own kernel then.
bool onednn_int8_sums(std::int32_t* acc, const std::int8_t* inp, const std::int8_t* weight, i64 BT, i64 C, i64 OC);

}  // namespace sb::kernels::cpu
