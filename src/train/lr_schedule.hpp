// SPDX-License-Identifier: Apache-2.0
// Learning rate per step: linear warm-up, then constant or cosine decay to min_lr.
// Leaves out step-wise and cyclic schedules.
#pragma once

#include <cmath>
#include <cstdint>

#include "plan/config.hpp"

namespace sb::train {

// step counts from 0; warm-up reaches the full rate at step warmup_steps - 1.
inline double learning_rate_at(const plan::OptimizerSpec& o, std::int64_t step, std::int64_t warmup_steps,
                               std::int64_t total_steps) {
  if (step < warmup_steps) return o.lr * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  if (o.schedule == "constant") return o.lr;
  const std::int64_t decay_steps = total_steps - warmup_steps;
  if (decay_steps <= 1) return o.lr;
  const double progress = static_cast<double>(step - warmup_steps) / static_cast<double>(decay_steps - 1);
  return o.min_lr + 0.5 * (o.lr - o.min_lr) * (1.0 + std::cos(M_PI * progress));
}

}  // namespace sb::train
