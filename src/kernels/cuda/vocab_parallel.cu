// SPDX-License-Identifier: Apache-2.0
// CUDA vocabulary-parallel embedding and cross-entropy on one rank's shard (see kernels.hpp):
// element-wise lambdas, and one block per row for the row reductions (sums in double). Leaves
// out the all-reduces between the calls, which are the caller's.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

namespace {

// dwte rows of the shard: one thread per column walks the tokens in order (no atomics).
__global__ void embedding_shard_backward_wte(float* dwte, const float* dout,
                                             const std::int32_t* tokens, i64 vocab_begin, i64 V,
                                             i64 BT, i64 C) {
  for (i64 c = grid_index(); c < C; c += grid_stride())
    for (i64 bt = 0; bt < BT; ++bt) {
      const i64 row = static_cast<i64>(tokens[bt]) - vocab_begin;
      if (row >= 0 && row < V) dwte[row * C + c] += dout[bt * C + c];
    }
}

__global__ void crossentropy_shard_max_rows(float* row_max, const float* logits, i64 V) {
  const i64 r = blockIdx.x;
  const float* x = logits + r * V;
  float local_max = -INFINITY;
  for (i64 i = threadIdx.x; i < V; i += blockDim.x) local_max = fmaxf(local_max, x[i]);
  const float m = block_max(local_max);
  if (threadIdx.x == 0) row_max[r] = m;
}

__global__ void crossentropy_shard_partials_rows(float* sumexp, float* target_logit,
                                                 const float* logits, const float* row_max,
                                                 const std::int32_t* targets, i64 vocab_begin,
                                                 i64 V) {
  const i64 r = blockIdx.x;
  const float* x = logits + r * V;
  double local_sum = 0.0;
  for (i64 i = threadIdx.x; i < V; i += blockDim.x) local_sum += expf(x[i] - row_max[r]);
  const double sum = block_sum(local_sum);
  if (threadIdx.x == 0) {
    sumexp[r] = static_cast<float>(sum);
    const i64 j = static_cast<i64>(targets[r]) - vocab_begin;
    target_logit[r] = j >= 0 && j < V ? x[j] : 0.0f;
  }
}

}  // namespace

SB_DECLARE_EMBEDDING_SHARD_FORWARD(float, float) {
  const i64 n = B * T_ * C;
  for_each_index(n, [=] __device__(i64 i) {
    const i64 bt = i / C, c = i % C;
    const i64 row = static_cast<i64>(tokens[bt]) - vocab_begin;
    float value = row >= 0 && row < V ? wte[row * C + c] : 0.0f;
    if (wpe) value += wpe[(bt % T_) * C + c];
    out[i] = value;
  });
}

SB_DECLARE_EMBEDDING_SHARD_BACKWARD(float, float) {
  if (B * T_ * C == 0) return;
  CudaContext& ctx = default_context();
  embedding_shard_backward_wte<<<blocks_for(C, 64), 64, 0, ctx.stream()>>>(
      dwte, dout, tokens, vocab_begin, V, B * T_, C);
  SB_CUDA_CHECK_LAUNCH();
  if (dwpe) {
    const i64 batch = B, steps = T_, width = C;
    for_each_index(T_ * C, [=] __device__(i64 i) {
      float sum = dwpe[i];
      for (i64 b = 0; b < batch; ++b) sum += dout[b * steps * width + i];
      dwpe[i] = sum;
    });
  }
}

SB_DECLARE_CROSSENTROPY_SHARD_MAX(float, float) {
  if (BT == 0) return;
  CudaContext& ctx = default_context();
  crossentropy_shard_max_rows<<<static_cast<unsigned>(BT), kThreads, 0, ctx.stream()>>>(
      row_max, logits, V);
  SB_CUDA_CHECK_LAUNCH();
}

SB_DECLARE_CROSSENTROPY_SHARD_PARTIALS(float, float) {
  if (BT == 0) return;
  CudaContext& ctx = default_context();
  crossentropy_shard_partials_rows<<<static_cast<unsigned>(BT), kThreads, 0, ctx.stream()>>>(
      sumexp, target_logit, logits, row_max, targets, vocab_begin, V);
  SB_CUDA_CHECK_LAUNCH();
}

SB_DECLARE_CROSSENTROPY_SHARD_FINISH(float, float) {
  for_each_index(BT * V, [=] __device__(i64 i) {
    const i64 r = i / V;
    probs[i] = expf(logits[i] - row_max[r]) / sumexp[r];
    if (i % V == 0) losses[r] = logf(sumexp[r]) - (target_logit[r] - row_max[r]);
  });
}

SB_DECLARE_CROSSENTROPY_SHARD_BACKWARD(float, float) {
  for_each_index(BT * V, [=] __device__(i64 i) {
    const i64 r = i / V;
    const float d = dlosses[r];
    float value = dlogits[i] + probs[i] * d;
    if (i % V == static_cast<i64>(targets[r]) - vocab_begin) value -= d;
    dlogits[i] = value;
  });
}

}  // namespace sb::kernels::cuda
