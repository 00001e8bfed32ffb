// SPDX-License-Identifier: Apache-2.0
// CUDA softmax + cross-entropy per row (one block per row, max subtracted, sum in double), and its
// element-wise backward. Leaves out the fused classifier (logits never materialised) and
// any check of target range on the device: targets are the caller's contract.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

// The row sum runs in double: at V = 50304 a float sum of terms that fall below half an ulp of
// the running total (~1) drops them, 1e-4 relative at GPT-2's vocabulary. expf is the precise
// one (no fast math in cmake/cuda.cmake): within 2 ulp, as the reference's std::exp.
__global__ void crossentropy_forward_rows(float* losses, float* probs, const float* logits,
                                          const std::int32_t* targets, i64 V) {
  const i64 r = blockIdx.x;
  const float* x = logits + r * V;
  float* p = probs + r * V;
  float local_max = -INFINITY;
  for (i64 i = threadIdx.x; i < V; i += blockDim.x) local_max = fmaxf(local_max, x[i]);
  const float max_logit = block_max(local_max);
  double local_sum = 0.0;
  for (i64 i = threadIdx.x; i < V; i += blockDim.x) {
    p[i] = expf(x[i] - max_logit);
    local_sum += p[i];
  }
  const double sum = block_sum(local_sum);
  for (i64 i = threadIdx.x; i < V; i += blockDim.x)  // each thread its own elements
    p[i] = static_cast<float>(p[i] / sum);
  if (threadIdx.x == 0) losses[r] = static_cast<float>(log(sum) - (x[targets[r]] - max_logit));
}

}  // namespace

SB_DECLARE_CROSSENTROPY_FORWARD(float, float) {
  if (BT == 0) return;
  CudaContext& ctx = default_context();
  crossentropy_forward_rows<<<static_cast<unsigned>(BT), kThreads, 0, ctx.stream()>>>(
      losses, probs, logits, targets, V);
  SB_CUDA_CHECK_LAUNCH();
}

// dlogits += probs dloss, then -= dloss at the target: the reference's two roundings.
SB_DECLARE_CROSSENTROPY_BACKWARD(float, float) {
  for_each_index(BT * V, [=] __device__(i64 i) {
    const i64 r = i / V;
    const float d = dlosses[r];
    float value = dlogits[i] + probs[i] * d;
    if (i % V == targets[r]) value -= d;
    dlogits[i] = value;
  });
}

}  // namespace sb::kernels::cuda
