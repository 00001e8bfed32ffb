// SPDX-License-Identifier: Apache-2.0
// GPipe, 1F1B and interleaved 1F1B operation lists, their closed-form peak and bubble, and the
// unit-time simulation that checks them.
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

namespace {

// Megatron-LM's forward_backward_pipelining_with_interleaving for rank `stage` of p with v chunks.
std::vector<PipelineOp> interleaved_stage_ops(int stages, int stage, i64 m, i64 v) {
  const i64 p = stages, total = m * v, group = p * v;
  const auto micro_of = [&](i64 k) { return (k / group) * p + k % p; };
  const auto chunk_of = [&](i64 k, bool forward) {
    const i64 c = (k % group) / p;
    return forward ? c : v - 1 - c;
  };
  std::vector<PipelineOp> ops;
  ops.reserve(static_cast<std::size_t>(2 * total));
  const auto forward = [&](i64 k) { ops.push_back({PipelineOpKind::forward, micro_of(k), chunk_of(k, true)}); };
  const auto backward = [&](i64 k) { ops.push_back({PipelineOpKind::backward, micro_of(k), chunk_of(k, false)}); };
  const i64 warmup = std::min<i64>((p - stage - 1) * 2 + (v - 1) * p, total);
  for (i64 k = 0; k < warmup; ++k) forward(k);
  for (i64 k = 0; k < total - warmup; ++k) {  // steady state: forward(warmup + k), backward(k)
    forward(warmup + k);
    backward(k);
  }
  for (i64 k = total - warmup; k < total; ++k) backward(k);  // cool-down
  return ops;
}

}  // namespace

std::vector<PipelineOp> pipeline_stage_ops(PipelineSchedule schedule, int stages, int stage,
                                           i64 micro_batches, i64 interleave) {
  check_shape(stages, stage, micro_batches);
  const i64 m = micro_batches;
  if (interleave > 1) {
    SB_CHECK(schedule == PipelineSchedule::one_f_one_b && stages > 1 && m % stages == 0,
             "interleaved schedule: {} with {} stages, {} micro-batches", to_string(schedule), stages, m);
    return interleaved_stage_ops(stages, stage, m, interleave);
  }
  SB_CHECK(interleave == 1, "pipeline interleave {}", interleave);
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

i64 pipeline_chunk_peak_in_flight(PipelineSchedule schedule, int stages, int stage, i64 micro_batches,
                                  i64 interleave, i64 chunk) {
  return pipeline_chunk_peaks_in_flight(schedule, stages, stage, micro_batches, interleave)
      .at(static_cast<std::size_t>(chunk));
}

std::vector<i64> pipeline_chunk_peaks_in_flight(PipelineSchedule schedule, int stages, int stage, i64 micro_batches,
                                                i64 interleave) {
  if (interleave == 1) return {pipeline_peak_in_flight(schedule, stages, stage, micro_batches)};
  std::vector<i64> in_flight(static_cast<std::size_t>(interleave), 0), peak(in_flight);
  for (const PipelineOp& op : pipeline_stage_ops(schedule, stages, stage, micro_batches, interleave)) {
    const auto c = static_cast<std::size_t>(op.chunk);
    in_flight[c] += op.kind == PipelineOpKind::forward ? 1 : -1;
    peak[c] = std::max(peak[c], in_flight[c]);
  }
  return peak;
}

i64 count_peak_in_flight(const std::vector<PipelineOp>& ops, i64 chunk) {
  i64 in_flight = 0, peak = 0;
  for (const PipelineOp& op : ops) {
    if (op.chunk != chunk) continue;
    in_flight += op.kind == PipelineOpKind::forward ? 1 : -1;
    peak = std::max(peak, in_flight);
  }
  return peak;
}

double pipeline_interleaved_bubble_ratio(int stages, i64 micro_batches, i64 interleave) {
  SB_CHECK(stages >= 1 && micro_batches >= 1 && interleave >= 1, "pipeline of {} stages, {} micro-batches, {} chunks",
           stages, micro_batches, interleave);
  return static_cast<double>(stages - 1) / static_cast<double>(interleave * micro_batches);
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

PipelineSimulation simulate_interleaved_pipeline(int stages, i64 micro_batches, i64 interleave,
                                                 double forward_time, double backward_time, double transfer) {
  std::vector<std::vector<PipelineOp>> ops(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s)
    ops[s] = pipeline_stage_ops(PipelineSchedule::one_f_one_b, stages, s, micro_batches, interleave);
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
  std::size_t v = 1;
  for (const auto& stage_ops : ops) {
    for (const PipelineOp& op : stage_ops) {
      SB_CHECK(op.micro >= 0 && op.micro < micro_batches && op.chunk >= 0, "micro-batch {} of {}, chunk {}",
               op.micro, micro_batches, op.chunk);
      v = std::max(v, static_cast<std::size_t>(op.chunk) + 1);
    }
  }

  // End time of forward(i, c) and backward(i, c) on each stage, at [c·m + i]; negative: not yet run.
  std::vector<std::vector<double>> forward_end(p, std::vector<double>(m * v, -1.0));
  std::vector<std::vector<double>> backward_end(p, std::vector<double>(m * v, -1.0));
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
        const auto c = static_cast<std::size_t>(op.chunk);
        const std::size_t at = c * m + static_cast<std::size_t>(op.micro);
        double ready = free_at[s];
        if (op.kind == PipelineOpKind::forward) {
          // the input: this chunk on the previous stage, or the previous chunk on the last one
          const bool local = s == 0 && c == 0;
          if (!local) {
            const double input = s > 0 ? forward_end[s - 1][at] : forward_end[p - 1][at - m];
            if (input < 0) break;
            ready = std::max(ready, input + transfer);
          }
        } else {
          if (forward_end[s][at] < 0) break;  // a schedule that runs a backward before its forward
          const bool local = s + 1 == p && c + 1 == v;
          if (!local) {
            const double gradient = s + 1 < p ? backward_end[s + 1][at] : backward_end[0][at + m];
            if (gradient < 0) break;
            ready = std::max(ready, gradient + transfer);
          }
        }
        const double duration =
            op.kind == PipelineOpKind::forward ? forward_time[s] : backward_time[s];
        sim.op_start[s].push_back(ready);
        sim.op_end[s].push_back(ready + duration);
        (op.kind == PipelineOpKind::forward ? forward_end : backward_end)[s][at] = ready + duration;
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
