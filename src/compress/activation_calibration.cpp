// SPDX-License-Identifier: Apache-2.0
// Max-abs activation calibration (see activation_calibration.hpp).
#include "compress/activation_calibration.hpp"

#include <algorithm>
#include <cmath>

#include "compress/weight_quantization.hpp"
#include "core/check.hpp"

namespace sb::compress {

void ActivationRange::observe(const float* x, std::int64_t n) {
  float m = max_abs_;
  bool finite = true;
  for (std::int64_t i = 0; i < n; ++i) {
    finite = finite && std::isfinite(x[i]);
    m = std::max(m, std::abs(x[i]));
  }
  SB_CHECK(finite, "activation calibration: a non-finite activation");
  max_abs_ = m;
  observed_ = true;
}

float ActivationRange::scale() const {
  SB_CHECK(observed_, "activation calibration: scale() before any calibration batch");
  return max_abs_ > 0.0f ? max_abs_ / kInt8Max : 1.0f;
}

}  // namespace sb::compress
