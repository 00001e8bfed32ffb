// SPDX-License-Identifier: Apache-2.0
// Per-tensor symmetric calibration of an activation: the largest |x| seen over the held-out
// calibration batches, scale = max / 127. Leaves out percentile and entropy (KL) calibration:
// max is what the acceptance figures were measured with.
#pragma once

#include <cstdint>

namespace sb::compress {

class ActivationRange {
 public:
  // x (n): folds max|x| into the range; a non-finite value is an internal error.
  void observe(const float* x, std::int64_t n);
  float max_abs() const { return max_abs_; }
  bool observed() const { return observed_; }
  // max|x| / 127; 1 when everything seen was zero. SB_CHECK: observe() was called.
  float scale() const;

 private:
  float max_abs_ = 0.0f;
  bool observed_ = false;
};

}  // namespace sb::compress
