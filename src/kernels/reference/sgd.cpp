// SPDX-License-Identifier: Apache-2.0
// Reference SGD with momentum for one tensor, in the operation order of torch.optim.SGD
// (single tensor, dampening 0). Leaves out Nesterov, dampening, maximize and threading.
#include "core/check.hpp"
#include "kernels/kernels.hpp"

namespace sb::kernels::reference {

// PyTorch: g = grad + wd p; buf = g at the first step (the buffer is created from g), else
// buf = momentum buf + g; p -= lr buf. Scalars are rounded once to T, as PyTorch does with
// Python floats.
template <class T>
SB_DECLARE_SGD_UPDATE(T, T) {
  SB_CHECK(step >= 1, "sgd_update: step must start at 1, got {}", step);
  const T learning_rate = static_cast<T>(lr), mu = static_cast<T>(momentum);
  const T decay = static_cast<T>(weight_decay);
  for (i64 i = 0; i < N; ++i) {
    const T g = grads[i] + decay * params[i];
    momentum_buffer[i] = step == 1 ? g : mu * momentum_buffer[i] + g;
    params[i] -= learning_rate * momentum_buffer[i];
  }
}

template SB_DECLARE_SGD_UPDATE(float, float);
template SB_DECLARE_SGD_UPDATE(double, double);

}  // namespace sb::kernels::reference
