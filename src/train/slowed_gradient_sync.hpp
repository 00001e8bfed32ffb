// SPDX-License-Identifier: Apache-2.0
// A straggler on demand (SB_INJECT_FAILURE=R:S:slowP, failure_injection.hpp): the slowed rank does
// P% more of its own CPU work in a step. Leaves out which rank and step (failure_injection) and
// judging stragglers (validate/stragglers.hpp).
#pragma once

#include "train/data_parallel.hpp"
#include "train/gradient_sync.hpp"

namespace sb::train {

// Busy work on the calling thread until it has run `seconds` of CPU time.
void spin_for_cpu_seconds(double seconds);

// Wraps a data-parallel gradient sync: when armed for a step, finish() first works P% of this
// step's own compute (its CPU time since the step began, the exchange's calls left out) and only
// then hands over to the real exchange. The added work thus follows the rank's compute in the
// same step, under the same contention as the other ranks' compute, as a slower device's would:
// work added at the start of the step (the earlier way) ran while the other ranks computed and
// slowed them too on shared cores, and lagged a step behind the figure it was a share of.
class SlowedGradientSync final : public GradientSync {
 public:
  // inner: the real exchange; figures: what it has measured so far in this step (its
  // cpu_in_backward_s: its calls' CPU time), which inner keeps up to date.
  SlowedGradientSync(GradientSync& inner, const GradientExchangeFigures& figures) : inner_(inner), figures_(figures) {}

  // This step's slowdown (0: none) and the process CPU time at its start.
  void arm(double slowdown, double step_cpu_start_s) {
    slowdown_ = slowdown;
    step_cpu_start_s_ = step_cpu_start_s;
  }

  void ready(std::int64_t offset, std::int64_t count) override { inner_.ready(offset, count); }
  bool reduces_every_micro_batch() const override { return inner_.reduces_every_micro_batch(); }
  void micro_batch_done() override { inner_.micro_batch_done(); }
  void finish(double local_scale) override;

 private:
  GradientSync& inner_;
  const GradientExchangeFigures& figures_;
  double slowdown_ = 0, step_cpu_start_s_ = 0;
};

}  // namespace sb::train
