// SPDX-License-Identifier: Apache-2.0
// The cpu back-end's BatchNorm2d passes and ReLU backward over bf16 tensors as they lie (fp32
// statistics and parameter gradients): what StorageKernels<bf16> calls on the cpu in place of
// widening every operand to float and narrowing the result: each value widened in registers,
// each result rounded to bf16 once; the elementwise results are the same bits, the per-channel
// sums may differ in their last bits (vectorised in another order). Declared from kernels.hpp's macros,
// beside the float kernels of the same names (batchnorm2d_split.cpp, relu.cpp).
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

}  // namespace sb::kernels::cpu
