// SPDX-License-Identifier: Apache-2.0
// Native 16-bit fully connected layer: the three GEMMs through cuBLASLt (gemm.hpp: autotuned,
// cached plans) with 16-bit operands on tensor cores and fp32 accumulation; the bias in the
// forward GEMM's epilogue, the weight gradient written in fp32 by the GEMM itself (A/B 16-bit,
// C/D fp32), the bias gradient as deterministic column sums. Rows that are not 16-byte
// multiples (C or OC not a multiple of 8, an odd vocabulary) go through cublasGemmEx instead,
// the same types and accumulation, with the bias copied into the output first and
// added by the GEMM (beta 1), so the sum is rounded once. Leaves out the GELU epilogue.
#include "kernels/cuda/gemm.hpp"
#include "kernels/kernels.hpp"
#include "kernels/cuda/storage_column_sums.cuh"

namespace sb::kernels::cuda::native {

namespace {

// Whether every row of the layer's operands is a whole number of 16-byte units from aligned
// pointers: the tensor-core kernels' need, which cuBLASLt plans are made for.
bool rows_are_16_byte_aligned(i64 C, i64 OC, std::initializer_list<const void*> pointers) {
  bool aligned = C % 8 == 0 && OC % 8 == 0;
  for (const void* p : pointers) aligned = aligned && aligned16(p);
  return aligned;
}

// Column-major C (m,n) = alpha op(A) op(B) + beta C through cublasGemmEx: A and B in S, C in
// c_type, fp32 accumulation.
template <class S>
void gemm_ex(CudaContext& ctx, cublasOperation_t op_a, cublasOperation_t op_b, i64 m, i64 n, i64 k, const void* a,
             i64 lda, const void* b, i64 ldb, float beta, void* c, cudaDataType_t c_type, i64 ldc) {
  const float one = 1.0f;
  const cudaDataType_t type = DeviceStorage<S>::cuda_type;
  SB_CUBLAS_CHECK(cublasGemmEx_64(ctx.cublas(), op_a, op_b, m, n, k, &one, a, type, lda, b, type, ldb, &beta, c,
                                  c_type, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// out (BT,OC) = bias (OC) on every row: an exact copy, which the GEMM then adds its product to
// with beta 1 (in fp32, rounded once, as the reference's widen-add-round).
template <class D>
__global__ void broadcast_bias_to_rows(D* out, const D* bias, i64 BT, i64 OC) {
  for (i64 i = grid_index(); i < BT * OC; i += grid_stride()) out[i] = bias[i % OC];
}

}  // namespace

// out (BT,OC) = inp (BT,C) · weight (OC,C)ᵀ + bias
template <class S>
void matmul_forward(S* out, const S* inp, const S* weight, const S* bias, i64 BT, i64 C, i64 OC) {
  if (BT == 0 || OC == 0) return;
  SB_CHECK(C > 0, "matmul_forward: C={} must be positive", C);
  CudaContext& ctx = default_context();
  if (rows_are_16_byte_aligned(C, OC, {out, inp, weight, bias})) {
    GemmShape shape{BT, OC, C, DeviceStorage<S>::precision};
    shape.bias = bias != nullptr;
    gemm(ctx, shape, inp, weight, out, 1.0f, 0.0f, bias);
    return;
  }
  // outᵀ (OC,BT) = weight (C,OC)ᵀ-stored transposed · inpᵀ (C,BT) + the bias already in out:
  // adding the bias after a rounded product would round twice, far off where the bias cancels it
  if (bias) {
    broadcast_bias_to_rows<<<blocks_for(BT * OC), kThreads, 0, ctx.stream()>>>(device_view(out), device_view(bias),
                                                                               BT, OC);
    SB_CUDA_CHECK_LAUNCH();
  }
  gemm_ex<S>(ctx, CUBLAS_OP_T, CUBLAS_OP_N, OC, BT, C, weight, C, inp, C, bias ? 1.0f : 0.0f, out,
             DeviceStorage<S>::cuda_type, OC);
}

// dinp (BT,C) += dout (BT,OC) · weight (OC,C); dweight (OC,C) += dout ᵀ · inp (fp32 output);
// dbias (OC) += column sums of dout. On the cuBLASLt path dinp's sum is rounded twice on Hopper:
// its kernels round the product to S before adding the old dinp (beta 1), seen on an H200
// (tests/cuda/test_cuda_gemm.cpp, GemmTolerance); the cublasGemmEx path rounds once.
template <class S>
void matmul_backward(S* dinp, float* dweight, float* dbias, const S* dout, const S* inp, const S* weight,
                     i64 BT, i64 C, i64 OC) {
  if (BT == 0 || OC == 0 || C == 0) return;
  CudaContext& ctx = default_context();
  const GemmPrecision precision = DeviceStorage<S>::precision;
  if (rows_are_16_byte_aligned(C, OC, {dinp, dweight, dout, inp, weight})) {
    if (dinp) {
      GemmShape shape{BT, C, OC, precision};
      shape.operands = GemmOperands::a_b;
      gemm(ctx, shape, dout, weight, dinp, 1.0f, 1.0f);
    }
    GemmShape shape{OC, C, BT, precision};
    shape.operands = GemmOperands::at_b;
    shape.float_output = true;
    gemm(ctx, shape, dout, inp, dweight, 1.0f, 1.0f);
  } else {  // the fp32 kernel's two products, beta = 1
    if (dinp)
      gemm_ex<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_N, C, BT, OC, weight, C, dout, OC, 1.0f, dinp,
                 DeviceStorage<S>::cuda_type, C);
    gemm_ex<S>(ctx, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, BT, inp, C, dout, OC, 1.0f, dweight, CUDA_R_32F, C);
  }
  if (dbias)
    accumulate_column_sums(ctx, dbias, static_cast<float*>(nullptr), device_view(dout),
                           static_cast<const Device<S>*>(nullptr), nullptr, nullptr, BT, OC);
}

#define SB_INSTANTIATE(S)                                                                              \
  template void matmul_forward<S>(S*, const S*, const S*, const S*, i64, i64, i64);                   \
  template void matmul_backward<S>(S*, float*, float*, const S*, const S*, const S*, i64, i64, i64);
SB_INSTANTIATE(bf16)
SB_INSTANTIATE(fp16)
#undef SB_INSTANTIATE

}  // namespace sb::kernels::cuda::native
