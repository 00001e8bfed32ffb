// SPDX-License-Identifier: Apache-2.0
// The measurement harness's rounds (see timing.hpp).
#include "measure/timing.hpp"

#include <algorithm>
#include <cmath>

#include "core/check.hpp"

namespace sb::measure {

std::vector<std::vector<double>> time_in_turns(std::span<const std::function<void()>> calls, const Plan& plan,
                                               RoundClock& clock) {
  SB_CHECK(plan.warmups >= 0 && plan.rounds >= 1 && plan.iterations >= 1,
           "measurement plan: {} warm-ups, {} rounds, {} iterations", plan.warmups, plan.rounds, plan.iterations);
  warm_up(calls, plan.warmups, clock);
  std::vector<std::vector<double>> samples(calls.size());
  for (auto& s : samples) s.reserve(static_cast<std::size_t>(plan.rounds));
  for (int round = 0; round < plan.rounds; ++round)
    for (std::size_t c = 0; c < calls.size(); ++c) {
      clock.start();
      for (int i = 0; i < plan.iterations; ++i) calls[c]();
      samples[c].push_back(clock.stop() / plan.iterations);
    }
  return samples;
}

void warm_up(std::span<const std::function<void()>> calls, int warmups, RoundClock& clock) {
  for (const std::function<void()>& call : calls)
    for (int w = 0; w < warmups; ++w) call();
  if (warmups > 0) clock.settle();
}

std::vector<double> time_rounds(const std::function<void()>& call, const Plan& plan, RoundClock& clock) {
  return std::move(time_in_turns(std::span(&call, 1), plan, clock).front());
}

double time_pass(std::span<const std::function<void()>> calls, RoundClock& clock) {
  clock.start();
  for (const std::function<void()>& call : calls) call();
  return clock.stop();
}

int count_to_fill(double budget_s, double seconds_each, int at_least, int at_most) {
  const double count = std::ceil(budget_s / std::max(seconds_each, 1e-9));
  return static_cast<int>(std::clamp(count, static_cast<double>(at_least), static_cast<double>(at_most)));
}

}  // namespace sb::measure
