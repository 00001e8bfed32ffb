// SPDX-License-Identifier: Apache-2.0
// The cpu back-end's elementwise kernels over 16-bit tensors as they lie (fp32 statistics and
// parameter gradients): BatchNorm2d's passes, the ReLU backward, LayerNorm, GELU and the
// residual add; attention, a head at a time widened into the thread's cache (attention.cpp);
// and softmax + cross-entropy, a block of rows at a time likewise (crossentropy.cpp). What
// StorageKernels<bf16> and <fp16> call on the cpu in place of widening every operand to float
// into scratch and narrowing the result. bf16 is widened in registers, each result rounded
// once: GELU, the residual add and LayerNorm in AVX-512 registers where the kernels' AVX-512
// paths run (avx512_lanes.hpp), the others in loops GCC vectorises. fp16 BatchNorm, LayerNorm,
// GELU and the residual add run in AVX-512 registers likewise; the others, and all of them
// elsewhere, row by row or a block of rows at a time in the thread's cache (cpu/fp16_rows.hpp),
// the float row function run there. The elementwise results are the widened kernels' bits; a sum over a row
// or channel (BatchNorm's channel sums, LayerNorm's statistics) may differ in its last bits,
// vectorised in another order, and so may a LayerNorm output by one unit in the last place.
// Declared from kernels.hpp's macros beside the float kernels of the same names
// (batchnorm2d_split.cpp, relu.cpp, layernorm.cpp, gelu.cpp, residual.cpp, attention.cpp,
// crossentropy.cpp).
// Leaves out the other kernels (StorageKernels widens those).
#pragma once

#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::cpu {

SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS(bf16, float);
SB_DECLARE_BATCHNORM2D_FORWARD_APPLY(bf16, float);
SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS(bf16, float);
SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY(bf16, float);
SB_DECLARE_RELU_BACKWARD(bf16, float);
SB_DECLARE_LAYERNORM_FORWARD(bf16, float);
SB_DECLARE_LAYERNORM_BACKWARD(bf16, float);
SB_DECLARE_GELU_FORWARD(bf16, float);
SB_DECLARE_GELU_BACKWARD(bf16, float);
SB_DECLARE_RESIDUAL_FORWARD(bf16, float);
SB_DECLARE_RESIDUAL_BACKWARD(bf16, float);
SB_DECLARE_ATTENTION_FORWARD(bf16, float);
SB_DECLARE_ATTENTION_BACKWARD(bf16, float);
SB_DECLARE_CROSSENTROPY_FORWARD(bf16, float);
SB_DECLARE_CROSSENTROPY_BACKWARD(bf16, float);
SB_DECLARE_BATCHNORM2D_CHANNEL_SUMS(fp16, float);
SB_DECLARE_BATCHNORM2D_FORWARD_APPLY(fp16, float);
SB_DECLARE_BATCHNORM2D_BACKWARD_SUMS(fp16, float);
SB_DECLARE_BATCHNORM2D_BACKWARD_APPLY(fp16, float);
SB_DECLARE_RELU_BACKWARD(fp16, float);
SB_DECLARE_LAYERNORM_FORWARD(fp16, float);
SB_DECLARE_LAYERNORM_BACKWARD(fp16, float);
SB_DECLARE_GELU_FORWARD(fp16, float);
SB_DECLARE_GELU_BACKWARD(fp16, float);
SB_DECLARE_RESIDUAL_FORWARD(fp16, float);
SB_DECLARE_RESIDUAL_BACKWARD(fp16, float);
SB_DECLARE_ATTENTION_FORWARD(fp16, float);
SB_DECLARE_ATTENTION_BACKWARD(fp16, float);
SB_DECLARE_CROSSENTROPY_FORWARD(fp16, float);
SB_DECLARE_CROSSENTROPY_BACKWARD(fp16, float);

}  // namespace sb::kernels::cpu
