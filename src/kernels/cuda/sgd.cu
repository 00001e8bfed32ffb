// SPDX-License-Identifier: Apache-2.0
// CUDA SGD with momentum for one tensor (PyTorch order, dampening 0).
// Leaves out Nesterov and multi-tensor launches.
#include "kernels/cuda/elementwise.cuh"
#include "kernels/kernels.hpp"

namespace sb::kernels::cuda {

SB_DECLARE_SGD_UPDATE(float, float) {
  SB_CHECK(step >= 1, "sgd_update: step must start at 1, got {}", step);
  const float learning_rate = static_cast<float>(lr), mu = static_cast<float>(momentum);
  const float decay = static_cast<float>(weight_decay);
  const bool first_step = step == 1;
  for_each_index(N, [=] __device__(i64 i) {
    const float g = grads[i] + decay * params[i];
    const float buf = first_step ? g : mu * momentum_buffer[i] + g;
    momentum_buffer[i] = buf;
    params[i] -= learning_rate * buf;
  });
}

}  // namespace sb::kernels::cuda
