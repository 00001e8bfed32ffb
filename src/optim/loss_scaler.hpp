// SPDX-License-Identifier: Apache-2.0
// Dynamic loss scaling for fp16 training (PyTorch's GradScaler rules): backward starts from
// loss·scale so that small gradients survive fp16's 2^-24 floor; a step whose gradients overflow
// (inf or NaN anywhere) is skipped and the scale multiplied by `backoff`; after `growth_interval`
// good steps in a row the scale is multiplied by `growth`. A static scale never changes but
// still skips overflowed steps. Leaves out per-tensor scales and the unscaling itself (the
// optimizer divides the scale out while clipping: gradient_clipping.hpp).
#pragma once

#include <cstdint>

namespace sb::optim {

struct LossScalerConfig {
  double initial_scale = 65536.0;  // 2^16, GradScaler's default
  double growth = 2.0;
  double backoff = 0.5;
  std::int64_t growth_interval = 2000;
  bool dynamic = true;  // false: the scale stays initial_scale
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& config);

  double scale() const { return scale_; }
  // After a step: overflowed = its gradients were not finite (the step was skipped).
  void update(bool overflowed);
  std::int64_t skipped_steps() const { return skipped_; }
  std::int64_t good_steps() const { return good_steps_; }
  // Restores what a checkpoint saved: the scale, the good steps since the last change, the
  // skipped steps so far.
  void restore(double scale, std::int64_t good_steps, std::int64_t skipped) {
    scale_ = scale;
    good_steps_ = good_steps;
    skipped_ = skipped;
  }

 private:
  LossScalerConfig config_;
  double scale_;
  std::int64_t good_steps_ = 0;  // since the last overflow or growth
  std::int64_t skipped_ = 0;
};

}  // namespace sb::optim
