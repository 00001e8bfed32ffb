// SPDX-License-Identifier: Apache-2.0
// The measurement harness every timed thing here plugs into (kernels, GEMMs, collectives, the
// pipeline's ping-pong and stage units, pipeline steps), as nccl-tests' benchmarks plug into
// its TimeTest: the harness owns the warm-up, the calls per round and the rounds, how a round is
// clocked (round_clock.hpp) and the statistics over the rounds (statistics.hpp); a timed thing
// is a call, or a step that reports its own figures. Several calls can take turns round by
// round, so that a slow spell of a shared machine lands on one round of each rather than on
// every round of one. A benchmark's rows go to HDF5 as an io::RecordTable and to stdout
// through measure::RowPrinter (row_printer.hpp). Leaves out what each benchmark times.
#pragma once

#include <functional>
#include <span>
#include <vector>

#include "measure/round_clock.hpp"
#include "measure/statistics.hpp"

namespace sb::measure {

struct Plan {
  int warmups = 1;     // untimed calls of each call before the first round
  int rounds = 3;      // samples per call
  int iterations = 1;  // calls per round; the sample is the round's seconds / iterations
};

// Seconds per call of every call, one sample per round in round order: `warmups` untimed calls
// of each call (in order) and the clock's settle(), then `rounds` rounds, in each every call in
// turn `iterations` times under its own start()/stop() of `clock`. samples[c][r]: call c in
// round r.
std::vector<std::vector<double>> time_in_turns(std::span<const std::function<void()>> calls, const Plan& plan,
                                               RoundClock& clock);

// `warmups` untimed calls of each call, in order, then the clock's settle(): what
// time_in_turns does first, for a measurement sized by a probe between the two.
void warm_up(std::span<const std::function<void()>> calls, int warmups, RoundClock& clock);

// One call: its seconds per call, one sample per round.
std::vector<double> time_rounds(const std::function<void()>& call, const Plan& plan, RoundClock& clock);

// Seconds of one pass over `calls` (each once, in order) under one start()/stop() of `clock`:
// a warm-up whose length can size the measurement after it.
double time_pass(std::span<const std::function<void()>> calls, RoundClock& clock);

// How many of something taking `seconds_each` fill `budget_s`, clamped to [at_least, at_most]
// (a probe of 0 s counts as 1 ns).
int count_to_fill(double budget_s, double seconds_each, int at_least, int at_most);

// For a step that times itself and reports figures (a pipeline step's wall, compute and bubble):
// `plan.warmups` steps whose figures are dropped, then `plan.rounds` steps, `before_each` (a
// barrier, zeroing) run before every step, warm-ups included; the figures in step order.
// plan.iterations is not used.
template <class Figures>
std::vector<Figures> collect_rounds(const Plan& plan, const std::function<Figures()>& step,
                                    const std::function<void()>& before_each = {}) {
  std::vector<Figures> figures;
  for (int r = 0; r < plan.warmups + plan.rounds; ++r) {
    if (before_each) before_each();
    Figures f = step();
    if (r >= plan.warmups) figures.push_back(std::move(f));
  }
  return figures;
}

// Statistics of one figure over collected rounds.
template <class Figures, class Field>
Statistics statistics_of(std::span<const Figures> rounds, Field field) {
  std::vector<double> values;
  values.reserve(rounds.size());
  for (const Figures& f : rounds) values.push_back(static_cast<double>(std::invoke(field, f)));
  return statistics_of(std::span<const double>(values));
}

}  // namespace sb::measure
