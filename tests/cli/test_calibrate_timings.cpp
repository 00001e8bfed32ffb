// SPDX-License-Identifier: Apache-2.0
// calibrate's own timings, called in process: what they run and return, not how fast (that is a
// benchmark's business). The gradient pages' refault inside gpt-tiny's backward.
#include <gtest/gtest.h>

#include <algorithm>

#include "calibrate/backward_page_refault.hpp"
#include "core/check.hpp"
#include "models/gpt/gpt_config.hpp"

namespace {

using sb::calibrate::measure_backward_page_refault;

TEST(BackwardPageRefault, TimesGptTinysBackwardWithItsGradientPagesGivenBackAndResident) {
  const sb::calibrate::BackwardPageRefault r = measure_backward_page_refault("bf16", 1, 2);
  // the whole model's fp32 gradients, one float a parameter
  EXPECT_EQ(r.gradient_bytes, 4 * sb::gpt::gpt_parameter_count(sb::gpt::gpt_config_by_name("gpt-tiny")));
  EXPECT_EQ(r.passes, 2);
  EXPECT_GT(r.resident_backward_s, 0.0);
  EXPECT_GT(r.given_back_backward_s, 0.0);
  EXPECT_DOUBLE_EQ(r.seconds_per_byte, std::max(0.0, r.given_back_backward_s - r.resident_backward_s) /
                                           static_cast<double>(r.gradient_bytes));
}

TEST(BackwardPageRefault, RefusesAPrecisionTheTrainerDoesNotStore) {
  EXPECT_THROW(measure_backward_page_refault("fp8", 1, 1), sb::UserError);
}

}  // namespace
