// SPDX-License-Identifier: Apache-2.0
// The injected straggler's added work, at the end of its backward.
#include "train/slowed_gradient_sync.hpp"

#include <algorithm>

#include "core/cpu_clock.hpp"

namespace sb::train {

void spin_for_cpu_seconds(double seconds) {
  const double until = thread_cpu_seconds() + seconds;
  volatile double sink = 1.0;
  while (thread_cpu_seconds() < until)
    for (int i = 0; i < 1000; ++i) sink = sink * 1.0000001 + 1e-9;
}

void SlowedGradientSync::finish(double local_scale) {
  if (slowdown_ > 0) {
    const double own_cpu_s = std::max(0.0, process_cpu_seconds() - step_cpu_start_s_ - figures_.cpu_in_backward_s);
    spin_for_cpu_seconds(slowdown_ * own_cpu_s);
  }
  inner_.finish(local_scale);
}

}  // namespace sb::train
