// Native 16-bit fully connected layer: the three GEMMs through cuBLASLt (gemm.hpp: autotuned,
// cached plans) with 16-bit operands on tensor cores and fp32 accumulation; the bias in the
// forward GEMM's epilogue, the weight gradient written in fp32 by the GEMM itself (A/B 16-bit,
// C/D fp32), the bias gradient as deterministic column sums. Leaves out the GELU epilogue.
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/native_storage.hpp"
#include "kernels/cuda/storage_column_sums.cuh"

namespace sb::kernels::cuda::native {

// out (BT,OC) = inp (BT,C) · weight (OC,C)ᵀ + bias
template <class S>
void matmul_forward(S* out, const S* inp, const S* weight, const S* bias, i64 BT, i64 C, i64 OC) {
  if (BT == 0 || OC == 0) return;
  SB_CHECK(C > 0, "matmul_forward: C={} must be positive", C);
  GemmShape shape{BT, OC, C, DeviceStorage<S>::precision};
  shape.bias = bias != nullptr;
  gemm(default_context(), shape, inp, weight, out, 1.0f, 0.0f, bias);
}

// dinp (BT,C) += dout (BT,OC) · weight (OC,C); dweight (OC,C) += dout ᵀ · inp (fp32 output);
// dbias (OC) += column sums of dout.
template <class S>
void matmul_backward(S* dinp, float* dweight, float* dbias, const S* dout, const S* inp, const S* weight,
                     i64 BT, i64 C, i64 OC) {
  if (BT == 0 || OC == 0 || C == 0) return;
  CudaContext& ctx = default_context();
  const GemmPrecision precision = DeviceStorage<S>::precision;
  if (dinp) {
    GemmShape shape{BT, C, OC, precision};
    shape.operands = GemmOperands::a_b;
    gemm(ctx, shape, dout, weight, dinp, 1.0f, 1.0f);
  }
  GemmShape shape{OC, C, BT, precision};
  shape.operands = GemmOperands::at_b;
  shape.float_output = true;
  gemm(ctx, shape, dout, inp, dweight, 1.0f, 1.0f);
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
