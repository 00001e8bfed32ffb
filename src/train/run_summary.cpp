// SPDX-License-Identifier: Apache-2.0
// The summary of a run and the prediction's errors (see run_summary.hpp).
#include "train/run_summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "core/statistics.hpp"

namespace sb::train {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

void StepTally::add(std::int64_t step, int rank, const StepResult& r) {
  timeline_.push_back({.step = step, .rank = rank, .step_time_s = r.step_s(), .compute_s = r.compute_s(),
                       .tp_comm_s = r.tp_comm_s, .p2p_s = r.p2p_s, .bubble_s = r.bubble_s,
                       .dp_comm_s = r.comm_s(), .optimizer_s = r.optimizer_s(), .compute_cpu_s = r.compute_cpu_s()});
  const GradientExchangeFigures& exchange = r.exchange;
  if (exchange.in_flight_s > 0) overlap_fractions_.push_back(exchange.hidden_s / exchange.in_flight_s);
  exchanged_bytes_ = exchange.bytes;
  if (exchange.bytes_sent >= 0) bytes_sent_.push_back(static_cast<double>(exchange.bytes_sent));
  final_loss_ = r.loss;
}

std::vector<double> StepTally::steady_step_times() const {
  std::vector<double> steady;
  for (std::size_t s = timeline_.size() > 1 ? 1 : 0; s < timeline_.size(); ++s)
    steady.push_back(timeline_[s].step_time_s);
  return steady;
}

double StepTally::step_time_median_s() const { return median(steady_step_times()); }

StepTally::Spread StepTally::step_time_spread() const {
  const std::vector<double> steady = steady_step_times();
  return {quantile(steady, 0.05), quantile(steady, 0.95), median_absolute_deviation(steady)};
}

double StepTally::bytes_sent_median() const { return bytes_sent_.empty() ? kNaN : median(bytes_sent_); }

double StepTally::overlap_fraction_median() const {
  return overlap_fractions_.empty() ? kNaN : median(overlap_fractions_);
}

io::Attributes summary_attributes(const RunTotals& t, const StepTally& tally, const TrainOutcome& outcome,
                                  std::span<const io::MemoryRow> memory, const ParameterConstraints* constraints,
                                  const plan::RunPrediction* prediction) {
  const double step_s = outcome.step_time_median_s;
  const auto peak = std::max_element(memory.begin(), memory.end(), [](const io::MemoryRow& a, const io::MemoryRow& b) {
    return a.peak_tracked < b.peak_tracked;
  });
  const StepTally::Spread spread = tally.step_time_spread();
  io::Attributes summary = {
      {"step_time_median_s", step_s},
      {"step_time_p5_s", spread.p5_s},
      {"step_time_p95_s", spread.p95_s},
      {"step_time_mad_s", spread.mad_s},
      {"samples_per_s", static_cast<double>(t.global_batch) / step_s},
      {"tokens_per_s", outcome.tokens_per_s},
      {"achieved_tflops", t.flops_per_step / step_s / 1e12},
      {"mfu", prediction && prediction->peak_flops_per_rank > 0
                  ? t.flops_per_step / step_s / (static_cast<double>(t.world_size) * prediction->peak_flops_per_rank)
                  : kNaN},
      {"mfu_peak_flops_per_rank", prediction ? prediction->peak_flops_per_rank : kNaN},
      {"mfu_peak_source", prediction ? prediction->peak_flops_source : std::string("no prediction: no peak")},
      {"mfu_convention", prediction && !prediction->mfu_convention.empty() ? prediction->mfu_convention
                                                                           : std::string("no prediction: no mfu")},
      {"final_loss", outcome.final_train_loss},
      {"final_eval_loss", outcome.final_heldout_loss},
      {"final_accuracy", outcome.final_heldout_accuracy},
      {"peak_bytes", peak->peak_tracked},
      {"weight_bytes", t.weight_bytes},
      {"parameters", t.parameters},
      {"flops_per_step", t.flops_per_step},
      {"steps", t.steps},
      {"dp_exchange_bytes", tally.exchanged_bytes()},
      {"dp_bytes_sent_per_step", tally.bytes_sent_median()},
      {"overlap_fraction", tally.overlap_fraction_median()},
      {"skipped_steps", t.skipped_steps}};
  if (constraints) {
    summary.emplace_back("sparsity", constraints->sparsity().fraction());
    summary.emplace_back("pruned_weights", constraints->pruned());
    summary.emplace_back("frozen_parameters", constraints->frozen());
  }
  return summary;
}

io::Attributes prediction_errors(const plan::RunPrediction& p, const TrainOutcome& outcome,
                                 std::span<const io::MemoryRow> memory) {
  const auto held = [](const io::MemoryRow& r) { return r.params + r.grads + r.optimizer + r.activations; };
  const io::MemoryRow& heaviest =
      *std::max_element(memory.begin(), memory.end(), [&](const auto& a, const auto& b) { return held(a) < held(b); });
  const auto error_pct = [](double predicted, double measured) {
    return measured > 0 ? 100.0 * (predicted - measured) / measured
                        : (predicted == 0 ? 0.0 : std::numeric_limits<double>::infinity());
  };
  const std::array<std::pair<const char*, double>, 4> categories = {
      {{"params", error_pct(p.memory.params, static_cast<double>(heaviest.params))},
       {"grads", error_pct(p.memory.grads, static_cast<double>(heaviest.grads))},
       {"optimizer", error_pct(p.memory.optimizer, static_cast<double>(heaviest.optimizer))},
       {"activations", error_pct(p.memory.activations, static_cast<double>(heaviest.activations))}}};
  double worst = 0;
  io::Attributes attrs = {{"error_step_time_pct", error_pct(p.step_time_s, outcome.step_time_median_s)}};
  for (const auto& [name, error] : categories) {
    attrs.emplace_back(fmt::format("error_{}_pct", name), error);
    if (std::fabs(error) > std::fabs(worst)) worst = error;
  }
  attrs.emplace_back("error_memory_pct", worst);
  if (p.band_step_time_s) {  // 1: the measured median step fell outside the prediction's band
    const auto [low, high] = *p.band_step_time_s;
    const double measured = outcome.step_time_median_s;
    attrs.emplace_back("step_time_outside_band", std::int64_t{measured < low || measured > high});
  }
  attrs.emplace_back("measured_rank", heaviest.rank);
  return attrs;
}

}  // namespace sb::train
