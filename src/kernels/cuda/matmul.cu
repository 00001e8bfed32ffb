// SPDX-License-Identifier: Apache-2.0
// CUDA fully connected layer: the two GEMMs through cuBLAS (fp32, no TF32), the bias added by
// a small kernel, its gradient as deterministic column sums (storage_column_sums.cuh: slices of
// rows over the whole GPU, added in slice order). Leaves out fused epilogues and 16-bit storage
// (storage_matmul.cu: cuBLASLt through gemm.hpp, the bias in the epilogue).
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/cuda/storage_column_sums.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

// out (BT,OC) += bias (OC) on every row
__global__ void add_bias_to_rows(float* out, const float* bias, i64 BT, i64 OC) {
  for (i64 i = grid_index(); i < BT * OC; i += grid_stride()) out[i] += bias[i % OC];
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
  if (dbias)
    native::accumulate_column_sums(ctx, dbias, static_cast<float*>(nullptr), dout, static_cast<const float*>(nullptr),
                                   nullptr, nullptr, BT, OC);
}

}  // namespace sb::kernels::cuda
