// SPDX-License-Identifier: Apache-2.0
// Each rank's arrival at each communication call of its steps (/runs/<id>/collectives): how
// long it computed before the call, since it last waited in one or since the step began; when
// it issued the call; how long it then waited for it. The ranks of a group meet at each of its
// collectives, so the rank that computed longest before one is the rank the others waited for
// there: stragglers attributed call by call (validate/stragglers.hpp reads the rows back).
// Leaves out collecting the calls (step_comm_window.hpp) and gathering the ranks' rows
// (train/rank_tables.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "io/results_file.hpp"
#include "metrics/step_comm_window.hpp"

namespace sb::metrics {

class CollectiveLog {
 public:
  // total_steps: the run's. Every stride-th step is logged, the stride the same on every rank,
  // so that at most kMaxSteps steps spread over the run are; a rank stops at kMaxRows rows.
  explicit CollectiveLog(std::int64_t total_steps);

  bool logs(std::int64_t step) const;  // step: 1-based
  // After step `step` (1-based) of world rank `rank`, which began at step_start_s (the calls'
  // clock): a row per call of a group of more than one rank.
  void add_step(std::int64_t step, int rank, double step_start_s, const std::vector<StepCall>& calls);

  const std::vector<io::CollectiveRow>& rows() const { return rows_; }

  static constexpr std::int64_t kMaxSteps = 256;
  static constexpr std::size_t kMaxRows = 100'000;

 private:
  std::int64_t stride_;
  std::vector<io::CollectiveRow> rows_;
};

}  // namespace sb::metrics
