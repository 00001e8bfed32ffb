// SPDX-License-Identifier: Apache-2.0
// The Chrome-trace events of a training step (see step_trace.hpp).
#include "metrics/step_trace.hpp"

#include <fmt/format.h>

#include <string>
#include <utility>

#include "parallel/comm_stats.hpp"

namespace sb::metrics {

namespace {

std::string chunk_suffix(const PipelineOpSpan& op) { return op.chunk > 0 ? fmt::format("c{}", op.chunk) : ""; }

}  // namespace

StepTrace::StepTrace(std::vector<parallel::Communicator*> communicators, bool enabled)
    : communicators_(std::move(communicators)), first_record_(communicators_.size(), 0), enabled_(enabled) {}

void StepTrace::begin_step() {
  for (std::size_t k = 0; k < communicators_.size(); ++k) {
    parallel::CommStats& stats = communicators_[k]->stats();
    if (stats.records().size() > kKeptRecords) stats.clear();
    first_record_[k] = stats.records().size();
  }
}

void StepTrace::end_step(const StepSpans& s) {
  if (!enabled_) return;
  timeline_.add(fmt::format("step {}", s.step), "step", s.start_s, s.seconds, s.step);
  if (s.pipeline_ops.empty()) timeline_.add("forward+backward", "compute", s.start_s, s.compute_s, s.step);
  for (const PipelineOpSpan& op : s.pipeline_ops) {
    if (op.start_s > op.wait_start_s)
      timeline_.add(fmt::format("wait {}{}{}", op.kind, op.micro, chunk_suffix(op)), "pipeline-wait", op.wait_start_s,
                    op.start_s - op.wait_start_s, s.step);
    timeline_.add(fmt::format("{}{}{}", op.kind, op.micro, chunk_suffix(op)), "compute", op.start_s,
                  op.end_s - op.start_s, s.step);
  }
  for (std::size_t k = 0; k < communicators_.size(); ++k) {
    const auto& records = communicators_[k]->stats().records();
    for (std::size_t i = first_record_[k]; i < records.size(); ++i)
      timeline_.add(fmt::format("{} {} {:.3g} MiB", communicators_[k]->name(),
                                parallel::to_string(records[i].collective),
                                static_cast<double>(records[i].bytes) / (1 << 20)),
                    "comm", records[i].start_s, records[i].seconds, s.step);
  }
  timeline_.add("optimizer", "optimizer", s.optimizer_start_s, s.optimizer_s, s.step);
}

void StepTrace::add_evaluation(double start_s, double seconds, std::int64_t step) {
  if (enabled_) timeline_.add("evaluation", "eval", start_s, seconds, step);
}

}  // namespace sb::metrics
