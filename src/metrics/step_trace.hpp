// SPDX-License-Identifier: Apache-2.0
// The Chrome-trace events of one rank's training steps: the step, its compute (or each pipeline
// micro-batch and the wait for its message), every collective its communicators recorded during
// it, the optimizer, and evaluations. Leaves out timing the step (train/distributed_step.hpp),
// collecting the step's calls (step_comm_window.hpp), gathering the ranks' traces and writing
// the file (the trainer, metrics/timeline.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "metrics/step_comm_window.hpp"
#include "metrics/timeline.hpp"

namespace sb::metrics {

// One forward ('F') or backward ('B') of a pipeline micro-batch as a stage ran it: it waited for
// its message from wait_start_s (= start_s when none), then computed from start_s to end_s.
// chunk: the stage's local model chunk under interleaving (named "F3c1"; 0 is left unnamed).
struct PipelineOpSpan {
  char kind = 'F';
  std::int64_t micro = 0;
  std::int64_t chunk = 0;
  double wait_start_s = 0, start_s = 0, end_s = 0;
};

// A step's intervals on parallel::comm_clock_seconds(). Without pipeline ops the step's compute
// is one "forward+backward" event.
struct StepSpans {
  std::int64_t step = 0;  // 1-based
  double start_s = 0, seconds = 0, compute_s = 0;
  double optimizer_start_s = 0, optimizer_s = 0;
  std::vector<PipelineOpSpan> pipeline_ops;
};

class StepTrace {
 public:
  // enabled false: no events.
  explicit StepTrace(bool enabled) : enabled_(enabled) {}

  bool enabled() const { return enabled_; }

  // After a step: its events, and one "comm" event per call it made (StepCommWindow::calls()).
  void end_step(const StepSpans& spans, const std::vector<StepCall>& calls);
  void add_evaluation(double start_s, double seconds, std::int64_t step);

  const Timeline& timeline() const { return timeline_; }

 private:
  bool enabled_;
  Timeline timeline_;
};

}  // namespace sb::metrics
