// GPipe and 1F1B operation lists, their closed-form peak and bubble, and the unit-time
// simulation that checks both.
#include "plan/pipeline_schedule.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace sb::plan {

using i64 = std::int64_t;

std::string_view to_string(PipelineSchedule schedule) {
  switch (schedule) {
    case PipelineSchedule::gpipe: return "gpipe";
    case PipelineSchedule::one_f_one_b: return "1f1b";
  }
  return "unknown";
}

PipelineSchedule pipeline_schedule_from_string(std::string_view name) {
  if (name == "gpipe") return PipelineSchedule::gpipe;
  if (name == "1f1b") return PipelineSchedule::one_f_one_b;
  throw UserError(fmt::format("unknown pipeline schedule '{}' (known: gpipe, 1f1b)", name));
}

namespace {

void check_shape(int stages, int stage, i64 micro_batches) {
  SB_CHECK(stages >= 1 && stage >= 0 && stage < stages, "pipeline stage {} of {}", stage, stages);
  SB_CHECK(micro_batches >= 1, "pipeline with {} micro-batches", micro_batches);
}

}  // namespace

std::vector<PipelineOp> pipeline_stage_ops(PipelineSchedule schedule, int stages, int stage,
                                           i64 micro_batches) {
  check_shape(stages, stage, micro_batches);
  const i64 m = micro_batches;
  std::vector<PipelineOp> ops;
  ops.reserve(static_cast<std::size_t>(2 * m));
  const auto forward = [&](i64 i) { ops.push_back({PipelineOpKind::forward, i}); };
  const auto backward = [&](i64 i) { ops.push_back({PipelineOpKind::backward, i}); };
  if (schedule == PipelineSchedule::gpipe) {
    for (i64 i = 0; i < m; ++i) forward(i);
    for (i64 i = 0; i < m; ++i) backward(i);
    return ops;
  }
  const i64 warmup = std::min<i64>(stages - stage - 1, m);
  for (i64 i = 0; i < warmup; ++i) forward(i);
  for (i64 i = 0; i < m - warmup; ++i) {  // steady state: forward(warmup + i), backward(i)
    forward(warmup + i);
    backward(i);
  }
  for (i64 i = m - warmup; i < m; ++i) backward(i);  // cool-down
  return ops;
}

i64 pipeline_peak_in_flight(PipelineSchedule schedule, int stages, int stage, i64 micro_batches) {
  check_shape(stages, stage, micro_batches);
  if (schedule == PipelineSchedule::gpipe) return micro_batches;
  return std::min<i64>(stages - stage, micro_batches);
}

i64 count_peak_in_flight(const std::vector<PipelineOp>& ops) {
  i64 in_flight = 0, peak = 0;
  for (const PipelineOp& op : ops) {
    in_flight += op.kind == PipelineOpKind::forward ? 1 : -1;
    peak = std::max(peak, in_flight);
  }
  return peak;
}

double pipeline_ideal_bubble_fraction(int stages, i64 micro_batches) {
  SB_CHECK(stages >= 1 && micro_batches >= 1, "pipeline of {} stages, {} micro-batches", stages,
           micro_batches);
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

PipelineSimulation simulate_pipeline(PipelineSchedule schedule, int stages, i64 micro_batches,
                                     double forward_time, double backward_time, double transfer) {
  std::vector<std::vector<PipelineOp>> ops(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) ops[s] = pipeline_stage_ops(schedule, stages, s, micro_batches);
  return simulate_pipeline_ops(ops, micro_batches, forward_time, backward_time, transfer);
}

PipelineSimulation simulate_pipeline(PipelineSchedule schedule, i64 micro_batches,
                                     const std::vector<double>& forward_time,
                                     const std::vector<double>& backward_time, double transfer) {
  const int stages = static_cast<int>(forward_time.size());
  std::vector<std::vector<PipelineOp>> ops(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) ops[s] = pipeline_stage_ops(schedule, stages, s, micro_batches);
  return simulate_pipeline_ops(ops, micro_batches, forward_time, backward_time, transfer);
}

PipelineSimulation simulate_pipeline_ops(const std::vector<std::vector<PipelineOp>>& ops,
                                         i64 micro_batches, double forward_time,
                                         double backward_time, double transfer) {
  return simulate_pipeline_ops(ops, micro_batches, std::vector<double>(ops.size(), forward_time),
                               std::vector<double>(ops.size(), backward_time), transfer);
}

PipelineSimulation simulate_pipeline_ops(const std::vector<std::vector<PipelineOp>>& ops,
                                         i64 micro_batches,
                                         const std::vector<double>& forward_time,
                                         const std::vector<double>& backward_time,
                                         double transfer) {
  const std::size_t p = ops.size();
  SB_CHECK(forward_time.size() == p && backward_time.size() == p,
           "{} stages with {} forward and {} backward times", p, forward_time.size(),
           backward_time.size());
  const auto m = static_cast<std::size_t>(micro_batches);
  for (const auto& stage_ops : ops) {
    for (const PipelineOp& op : stage_ops) {
      SB_CHECK(op.micro >= 0 && op.micro < micro_batches, "micro-batch {} of {}", op.micro,
               micro_batches);
    }
  }

  // End time of forward(i) and backward(i) on each stage; negative: not yet run.
  std::vector<std::vector<double>> forward_end(p, std::vector<double>(m, -1.0));
  std::vector<std::vector<double>> backward_end(p, std::vector<double>(m, -1.0));
  PipelineSimulation sim;
  sim.busy.assign(p, 0.0);
  sim.op_start.assign(p, {});
  sim.op_end.assign(p, {});
  std::vector<std::size_t> next(p, 0);  // index of each stage's next op
  std::vector<double> free_at(p, 0.0);

  // Each op's start depends only on its stage's previous op and one message, both fixed once
  // known, so running every op that is ready, in any order, until none is gives exact times.
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t s = 0; s < p; ++s) {
      while (next[s] < ops[s].size()) {
        const PipelineOp& op = ops[s][next[s]];
        const auto i = static_cast<std::size_t>(op.micro);
        double ready = free_at[s];
        if (op.kind == PipelineOpKind::forward) {
          if (s > 0) {
            if (forward_end[s - 1][i] < 0) break;
            ready = std::max(ready, forward_end[s - 1][i] + transfer);
          }
        } else {
          if (forward_end[s][i] < 0) break;  // a schedule that runs a backward before its forward
          if (s + 1 < p) {
            if (backward_end[s + 1][i] < 0) break;
            ready = std::max(ready, backward_end[s + 1][i] + transfer);
          }
        }
        const double duration =
            op.kind == PipelineOpKind::forward ? forward_time[s] : backward_time[s];
        sim.op_start[s].push_back(ready);
        sim.op_end[s].push_back(ready + duration);
        (op.kind == PipelineOpKind::forward ? forward_end : backward_end)[s][i] = ready + duration;
        free_at[s] = ready + duration;
        sim.busy[s] += duration;
        ++next[s];
        progress = true;
      }
    }
  }
  sim.completed = true;
  for (std::size_t s = 0; s < p; ++s) sim.completed = sim.completed && next[s] == ops[s].size();
  for (std::size_t s = 0; s < p; ++s) sim.makespan = std::max(sim.makespan, free_at[s]);
  sim.idle_fraction.resize(p);
  for (std::size_t s = 0; s < p; ++s) {
    sim.idle_fraction[s] = sim.makespan > 0 ? 1.0 - sim.busy[s] / sim.makespan : 0.0;
  }
  return sim;
}

}  // namespace sb::plan
