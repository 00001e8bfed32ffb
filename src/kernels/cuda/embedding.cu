// SPDX-License-Identifier: Apache-2.0
// CUDA token + position embedding. Backward is deterministic without atomics: one thread per
// column walks the tokens in order. Leaves out llm.c's sorted-bucket backward (faster for
// large B·T), a later optimisation.
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/cuda/launch.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

__global__ void embedding_forward_kernel(float* out, const std::int32_t* tokens, const float* wte,
                                         const float* wpe, i64 B, i64 T, i64 C) {
  for (i64 i = grid_index(); i < B * T * C; i += grid_stride()) {
    const i64 bt = i / C, c = i % C, t = bt % T;
    out[i] = wte[static_cast<i64>(tokens[bt]) * C + c] + wpe[t * C + c];
  }
}

// dwte (V,C) += dout rows by token: column c of every row is one thread's, so repeated tokens
// never race, and rows add in the reference's order.
__global__ void embedding_backward_wte(float* dwte, const float* dout, const std::int32_t* tokens,
                                       i64 BT, i64 C) {
  for (i64 c = grid_index(); c < C; c += grid_stride())
    for (i64 bt = 0; bt < BT; ++bt) dwte[static_cast<i64>(tokens[bt]) * C + c] += dout[bt * C + c];
}

// dwpe (T,C) += sum over the batch, one thread per (t, c).
__global__ void embedding_backward_wpe(float* dwpe, const float* dout, i64 B, i64 T, i64 C) {
  for (i64 i = grid_index(); i < T * C; i += grid_stride()) {
    float sum = dwpe[i];
    for (i64 b = 0; b < B; ++b) sum += dout[b * T * C + i];
    dwpe[i] = sum;
  }
}

}  // namespace

SB_DECLARE_EMBEDDING_FORWARD(float, float) {
  if (B * T_ * C == 0) return;
  CudaContext& ctx = default_context();
  embedding_forward_kernel<<<blocks_for(B * T_ * C), kThreads, 0, ctx.stream()>>>(out, tokens, wte,
                                                                                 wpe, B, T_, C);
  SB_CUDA_CHECK_LAUNCH();
}

SB_DECLARE_EMBEDDING_BACKWARD(float, float) {
  if (B * T_ * C == 0) return;
  CudaContext& ctx = default_context();
  embedding_backward_wte<<<blocks_for(C, 64), 64, 0, ctx.stream()>>>(dwte, dout, tokens, B * T_, C);
  SB_CUDA_CHECK_LAUNCH();
  embedding_backward_wpe<<<blocks_for(T_ * C), kThreads, 0, ctx.stream()>>>(dwpe, dout, B, T_, C);
  SB_CUDA_CHECK_LAUNCH();
}

}  // namespace sb::kernels::cuda
