// SPDX-License-Identifier: Apache-2.0
// The cpu back-end's elementwise kernels over bf16 tensors as they lie (fp32 statistics and
// parameter gradients): BatchNorm2d's passes, the ReLU backward, LayerNorm, GELU and the
// residual add. What
// StorageKernels<bf16> calls on the cpu in place of widening every operand to float into
// scratch and narrowing the result: each value widened in registers, each result rounded to
// bf16 once, so the elementwise results are the same bits; a sum over a row or channel (BatchNorm's
// channel sums, LayerNorm's statistics) may differ in its last bits, vectorised in another
// order, and so may a LayerNorm output by one bf16 unit in the last place. Declared from kernels.hpp's macros beside the
// float kernels of the same names (batchnorm2d_split.cpp, relu.cpp, layernorm.cpp, gelu.cpp,
// residual.cpp).
// Leaves out fp16 and the other kernels (StorageKernels widens those).
#pragma once

#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"

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

}  // namespace sb::kernels::cpu
