// SPDX-License-Identifier: Apache-2.0
// The im2col + OpenBLAS paths of the cpu conv2d on their own, as conv2d_forward/backward take
// them for 1x1 convolutions (and kernels smaller than the stride) and on CPUs without AVX2:
// exposed so that tests check them on every CPU. Leaves out the choice of path (conv2d.cpp).
#pragma once

#include "kernels/kernels.hpp"

namespace sb::kernels::cpu {

// Arguments and results as conv2d_forward and conv2d_backward (kernels.hpp).
void conv2d_forward_im2col(float* out, const float* inp, const float* weight, const float* bias,
                           i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH, i64 KW, i64 stride,
                           i64 pad);
void conv2d_backward_im2col(float* dinp, float* dweight, float* dbias, const float* dout,
                            const float* inp, const float* weight, i64 N, i64 C, i64 H, i64 W,
                            i64 OC, i64 KH, i64 KW, i64 stride, i64 pad);

}  // namespace sb::kernels::cpu
