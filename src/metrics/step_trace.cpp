// SPDX-License-Identifier: Apache-2.0
// The Chrome-trace events of a training step (see step_trace.hpp).
#include "metrics/step_trace.hpp"

#include <fmt/format.h>

#include <string>

#include "parallel/comm_stats.hpp"

namespace sb::metrics {

namespace {

std::string chunk_suffix(const PipelineOpSpan& op) { return op.chunk > 0 ? fmt::format("c{}", op.chunk) : ""; }

}  // namespace

void StepTrace::end_step(const StepSpans& s, const std::vector<StepCall>& calls) {
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
  for (const StepCall& call : calls)
    timeline_.add(fmt::format("{} {} {:.3g} MiB", call.group->comm->name(), parallel::to_string(call.record->collective),
                              static_cast<double>(call.record->bytes) / (1 << 20)),
                  "comm", call.record->start_s, call.record->seconds, s.step);
  timeline_.add("optimizer", "optimizer", s.optimizer_start_s, s.optimizer_s, s.step);
}

void StepTrace::add_evaluation(double start_s, double seconds, std::int64_t step) {
  if (enabled_) timeline_.add("evaluation", "eval", start_s, seconds, step);
}

}  // namespace sb::metrics
