// SPDX-License-Identifier: Apache-2.0
// What a run's steps add up to: this rank's tally of its steps (timeline rows, the
// data-parallel exchange's figures, the last loss), the summary attributes of /runs/<id>/summary,
// and the prediction's errors against the measurement. Leaves out gathering the ranks
// (train/rank_tables.hpp) and writing (train/run_record.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "io/results_file.hpp"
#include "train/distributed_step.hpp"
#include "train/parameter_constraints.hpp"
#include "plan/run_prediction.hpp"
#include "train/trainer.hpp"

namespace sb::train {

class StepTally {
 public:
  // After step `step` (1-based) on this rank.
  void add(std::int64_t step, int rank, const StepResult& r);

  const std::vector<io::TimelineRow>& timeline() const { return timeline_; }
  double final_loss() const { return final_loss_; }
  // Over the steady steps: every step but the first (page faults, thread start) when there are more.
  double step_time_median_s() const;
  // The same steady steps' 5th and 95th percentiles and median absolute deviation.
  struct Spread {
    double p5_s, p95_s, mad_s;
  };
  Spread step_time_spread() const;
  std::int64_t exchanged_bytes() const { return exchanged_bytes_; }  // the last step's exchange
  double bytes_sent_median() const;        // NaN when the exchange does not count them
  double overlap_fraction_median() const;  // NaN when nothing was in flight

 private:
  std::vector<double> steady_step_times() const;

  std::vector<io::TimelineRow> timeline_;
  std::vector<double> overlap_fractions_, bytes_sent_;
  std::int64_t exchanged_bytes_ = 0;
  double final_loss_ = 0;
};

// The run as a whole, beside the tally and the memory table.
struct RunTotals {
  std::int64_t global_batch = 0, tokens_per_step = 0, parameters = 0, steps = 0, skipped_steps = 0;
  std::int64_t weight_bytes = 0;  // as stored: the int8 model's after quantisation
  double flops_per_step = 0;
  int world_size = 1;
};

// /runs/<id>/summary. mfu is measured against the prediction's peak (NaN without one);
// constraints (may be null): what fine-tuning kept fixed and the sparsity the weights reached.
io::Attributes summary_attributes(const RunTotals& totals, const StepTally& tally, const TrainOutcome& outcome,
                                  std::span<const io::MemoryRow> memory, const ParameterConstraints* constraints,
                                  const plan::RunPrediction* prediction);

// The prediction's errors against the run: signed percentages, (predicted − measured) /
// measured. Memory compares each tracked category of the rank that holds the most in them (the
// prediction is of the most loaded rank); error_memory_pct is the category furthest off.
io::Attributes prediction_errors(const plan::RunPrediction& p, const TrainOutcome& outcome,
                                 std::span<const io::MemoryRow> memory);

}  // namespace sb::train
