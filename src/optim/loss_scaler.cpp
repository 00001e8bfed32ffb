// SPDX-License-Identifier: Apache-2.0
// The scale's backoff and growth.
#include "optim/loss_scaler.hpp"

#include <cmath>

#include "core/check.hpp"

namespace sb::optim {

LossScaler::LossScaler(const LossScalerConfig& config) : config_(config), scale_(config.initial_scale) {
  SB_USER_CHECK(std::isfinite(config.initial_scale) && config.initial_scale > 0,
                "precision.loss_scale: the initial scale must be a positive number, got {}", config.initial_scale);
  SB_USER_CHECK(config.growth_interval >= 1, "precision.growth_interval must be at least 1, got {}",
                config.growth_interval);
  SB_CHECK(config.growth > 1 && config.backoff > 0 && config.backoff < 1, "loss scaler growth {} backoff {}",
           config.growth, config.backoff);
}

void LossScaler::update(bool overflowed) {
  if (overflowed) {
    ++skipped_;
    good_steps_ = 0;
    if (config_.dynamic) scale_ *= config_.backoff;
    return;
  }
  if (config_.dynamic && ++good_steps_ == config_.growth_interval) {
    scale_ *= config_.growth;
    good_steps_ = 0;
  }
}

}  // namespace sb::optim
