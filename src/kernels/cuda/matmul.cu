// SPDX-License-Identifier: Apache-2.0
// CUDA fully connected layer: the two GEMMs through cuBLAS (fp32, no TF32), bias as small
// kernels. Leaves out fused epilogues and 16-bit storage (storage_matmul.cu: cuBLASLt through
// gemm.hpp, the bias in the epilogue).
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

// out (BT,OC) += bias (OC) on every row
__global__ void add_bias_to_rows(float* out, const float* bias, i64 BT, i64 OC) {
  for (i64 i = grid_index(); i < BT * OC; i += grid_stride()) out[i] += bias[i % OC];
}

// dbias (OC) += column sums of dout (BT,OC), one thread per column, rows in order (the
// reference's order, so the result matches it bit for bit).
__global__ void accumulate_column_sums(float* dbias, const float* dout, i64 BT, i64 OC) {
  for (i64 o = grid_index(); o < OC; o += grid_stride()) {
    float sum = dbias[o];
    for (i64 bt = 0; bt < BT; ++bt) sum += dout[bt * OC + o];
    dbias[o] = sum;
  }
}

}  // namespace

// Row-major X (r,c) is column-major Xᵀ (c,r) with leading dimension c, so every product below
// is written for the transposes: out ᵀ (OC,BT) = weight ᵀ-of-(C,OC) · inp ᵀ (C,BT).
SB_DECLARE_MATMUL_FORWARD(float, float) {
  if (BT == 0 || OC == 0) return;
  CudaContext& ctx = default_context();
  const float one = 1.0f, zero = 0.0f;
  SB_CUBLAS_CHECK(cublasSgemm_64(ctx.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, OC, BT, C, &one, weight, C,
                                 inp, C, &zero, out, OC));
  if (bias) {
    add_bias_to_rows<<<blocks_for(BT * OC), kThreads, 0, ctx.stream()>>>(out, bias, BT, OC);
    SB_CUDA_CHECK_LAUNCH();
  }
}

// dinp (BT,C) += dout (BT,OC) · weight (OC,C); dweight (OC,C) += dout ᵀ · inp: beta = 1.
SB_DECLARE_MATMUL_BACKWARD(float, float) {
  if (BT == 0 || OC == 0 || C == 0) return;
  CudaContext& ctx = default_context();
  const float one = 1.0f;
  SB_CUBLAS_CHECK(cublasSgemm_64(ctx.cublas(), CUBLAS_OP_N, CUBLAS_OP_N, C, BT, OC, &one, weight, C,
                                 dout, OC, &one, dinp, C));
  SB_CUBLAS_CHECK(cublasSgemm_64(ctx.cublas(), CUBLAS_OP_N, CUBLAS_OP_T, C, OC, BT, &one, inp, C,
                                 dout, OC, &one, dweight, C));
  if (dbias) {
    accumulate_column_sums<<<blocks_for(OC), kThreads, 0, ctx.stream()>>>(dbias, dout, BT, OC);
    SB_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace sb::kernels::cuda
