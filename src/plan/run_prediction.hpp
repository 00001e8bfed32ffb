// SPDX-License-Identifier: Apache-2.0
// What the cost model predicted for a run before it started, as the trainer stores it beside
// the measurement: the attributes of the run's `prediction` group, and the figures the trainer
// compares with what it measured to add error_step_time_pct and error_memory_pct after the run.
// Plain data: the prediction itself is the cost model's (src/costmodel), made by the caller.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "io/attr_value.hpp"

namespace sb::plan {

struct PredictedMemory {  // bytes on the most loaded rank, per tracked category
  double params = 0, grads = 0, optimizer = 0, activations = 0;
};

struct RunPrediction {
  io::Attributes attributes;  // written to /runs/<id>/prediction before the first step
  bool feasible = false;      // false: no numbers to compare (the reason is in attributes)
  double step_time_s = 0;
  PredictedMemory memory;
  // the site's dense peak of the run's precision times the devices a rank computes on (its
  // cores on a CPU site), for summary.mfu
  double peak_flops_per_rank = 0;
  std::string peak_flops_source, mfu_convention;
  // the step time's band (low, high) in seconds, when the site's device has one; the trainer
  // stores step_time_outside_band after the run
  std::optional<std::pair<double, double>> band_step_time_s;  // beside summary.mfu (costmodel::kMfuConvention)
  // A sentence the trainer prints on rank 0 before the first step: the site's kernel times were
  // calibrated on another CPU than this one. Empty: nothing to say.
  std::string warning;
};

}  // namespace sb::plan
