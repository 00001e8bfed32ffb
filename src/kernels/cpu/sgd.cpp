// SPDX-License-Identifier: Apache-2.0
// SGD with momentum for one tensor with Kokkos over chunks, the same operation order as the
// reference (torch.optim.SGD, dampening 0). Leaves out Nesterov and multi-tensor fusion.
#include "kernels/cpu/host_parallel.hpp"

namespace sb::kernels::cpu {

namespace {

// first_step: the buffer is created from g (its old contents are never read).
SB_CPU_VECTOR_CLONES
void sgd_chunk(float* params, const float* grads, float* buf, i64 n, float lr, float momentum,
               float weight_decay, bool first_step) {
  if (first_step) {
    for (i64 i = 0; i < n; ++i) {
      const float g = grads[i] + weight_decay * params[i];
      buf[i] = g;
      params[i] -= lr * g;
    }
    return;
  }
  for (i64 i = 0; i < n; ++i) {
    const float b = momentum * buf[i] + (grads[i] + weight_decay * params[i]);
    buf[i] = b;
    params[i] -= lr * b;
  }
}

}  // namespace

SB_DECLARE_SGD_UPDATE(float, float) {
  SB_CHECK(step >= 1, "sgd_update: step must start at 1, got {}", step);
  const float learning_rate = static_cast<float>(lr), mu = static_cast<float>(momentum);
  const float decay = static_cast<float>(weight_decay);
  parallel_for_chunks("sb::sgd_update", N, kElementwiseChunk, [=](i64 begin, i64 end) {
    sgd_chunk(params + begin, grads + begin, momentum_buffer + begin, end - begin, learning_rate,
              mu, decay, step == 1);
  });
}

}  // namespace sb::kernels::cpu
