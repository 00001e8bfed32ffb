// simulate_step: the stages' op lists from train/pipeline_schedule.hpp run against each other
// in time, then each stage's gradient buckets and optimizer. Leaves out the costs themselves
// (step_prediction.cpp).
#include "costmodel/step_simulation.hpp"

#include <algorithm>

#include "core/check.hpp"

namespace sb::costmodel {

using i64 = std::int64_t;

const char* to_string(TimelineOpKind kind) {
  switch (kind) {
    case TimelineOpKind::forward: return "forward";
    case TimelineOpKind::backward: return "backward";
    case TimelineOpKind::send_forward: return "send_forward";
    case TimelineOpKind::send_backward: return "send_backward";
    case TimelineOpKind::dp_bucket: return "dp_bucket";
    case TimelineOpKind::optimizer: return "optimizer";
  }
  return "unknown";
}

int rank_stage(int rank, int dp, int tp) { return rank / (dp * tp); }

StepSimulation simulate_step(const StepSimulationInput& input) {
  const std::size_t p = input.stages.size();
  const i64 m = input.micro_batches;
  SB_CHECK(p >= 1 && m >= 1, "step simulation of {} stages and {} micro-batches", p, m);
  const auto mu = static_cast<std::size_t>(m);
  std::vector<std::vector<plan::PipelineOp>> ops(p);
  for (std::size_t s = 0; s < p; ++s)
    ops[s] = plan::pipeline_stage_ops(input.schedule, static_cast<int>(p), static_cast<int>(s), m);

  // When forward(i)'s input reaches stage s (from s − 1) and backward(i)'s output gradient
  // reaches it (from s + 1); negative: not yet sent. Stage 0's inputs and the last stage's
  // loss gradient are local.
  std::vector<std::vector<double>> activation_at(p, std::vector<double>(mu, -1.0));
  std::vector<std::vector<double>> gradient_at(p, std::vector<double>(mu, -1.0));
  std::fill(activation_at[0].begin(), activation_at[0].end(), 0.0);
  std::vector<std::vector<bool>> forwarded(p, std::vector<bool>(mu, false));

  StepSimulation sim;
  sim.stages.resize(p);
  std::vector<std::size_t> next(p, 0);
  std::vector<double> free_at(p, 0.0);
  std::vector<TimelineOp> last_backward(p);  // compute part of backward(m − 1), for the buckets

  // An op's start depends only on its stage's previous op and one message, both fixed once
  // known, so running every ready op, in any order, until none is gives exact times.
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t s = 0; s < p; ++s) {
      const StageOpCosts& cost = input.stages[s];
      StageTimeline& tl = sim.stages[s];
      while (next[s] < ops[s].size()) {
        const plan::PipelineOp& op = ops[s][next[s]];
        const auto i = static_cast<std::size_t>(op.micro);
        const bool forward = op.kind == plan::PipelineOpKind::forward;
        double ready = free_at[s];
        if (forward) {
          if (activation_at[s][i] < 0) break;
          ready = std::max(ready, activation_at[s][i]);
        } else {
          SB_CHECK(forwarded[s][i], "stage {} runs backward({}) before its forward", s, i);
          if (s + 1 < p) {
            if (gradient_at[s][i] < 0) break;
            ready = std::max(ready, gradient_at[s][i]);
          }
        }
        const double compute = forward ? cost.forward_compute_s : cost.backward_compute_s;
        const double tp = forward ? cost.forward_tp_s : cost.backward_tp_s;
        const TimelineOp done{forward ? TimelineOpKind::forward : TimelineOpKind::backward, op.micro, ready,
                              ready + compute + tp};
        tl.compute.push_back(done);
        tl.compute_s += compute;
        tl.tp_s += tp;
        double end = done.end;
        if (forward) {
          forwarded[s][i] = true;
          if (s + 1 < p) {
            tl.compute.push_back({TimelineOpKind::send_forward, op.micro, end, end + cost.send_forward_s});
            end += cost.send_forward_s;
            tl.p2p_s += cost.send_forward_s;
            activation_at[s + 1][i] = end;
          }
        } else {
          if (op.micro == m - 1) last_backward[s] = done;
          if (s > 0) {
            tl.compute.push_back({TimelineOpKind::send_backward, op.micro, end, end + cost.send_backward_s});
            end += cost.send_backward_s;
            tl.p2p_s += cost.send_backward_s;
            gradient_at[s - 1][i] = end;
          }
        }
        free_at[s] = end;
        ++next[s];
        progress = true;
      }
    }
  }
  for (std::size_t s = 0; s < p; ++s)
    SB_CHECK(next[s] == ops[s].size(), "the {} schedule deadlocks on stage {} of {}",
             plan::to_string(input.schedule), s, p);

  for (std::size_t s = 0; s < p; ++s) {
    const StageOpCosts& cost = input.stages[s];
    StageTimeline& tl = sim.stages[s];
    SB_CHECK(cost.bucket_bytes.size() == cost.bucket_s.size(), "stage {}: {} bucket sizes, {} times", s,
             cost.bucket_bytes.size(), cost.bucket_s.size());
    SB_CHECK(ops[s].back() == (plan::PipelineOp{plan::PipelineOpKind::backward, m - 1}),
             "stage {} does not end with the last micro-batch's backward", s);
    tl.pipeline_end = free_at[s];
    tl.bubble_s = tl.pipeline_end - (tl.compute_s + tl.tp_s + tl.p2p_s);
    tl.peak_in_flight = plan::count_peak_in_flight(ops[s]);

    // buckets: the backward produces gradients at an even rate; bucket k is ready once its
    // last byte is, and the comm stream runs one bucket at a time
    double total_bytes = 0;
    for (double b : cost.bucket_bytes) total_bytes += b;
    const TimelineOp& lb = last_backward[s];
    double produced = 0, comm_free = 0;
    for (std::size_t k = 0; k < cost.bucket_s.size(); ++k) {
      produced += cost.bucket_bytes[k];
      const double ready =
          input.overlap && total_bytes > 0 ? lb.start + (lb.end - lb.start) * (produced / total_bytes) : lb.end;
      const double start = std::max(ready, comm_free);
      comm_free = start + cost.bucket_s[k];
      tl.comm.push_back({TimelineOpKind::dp_bucket, static_cast<i64>(k), start, comm_free});
      tl.dp_s += cost.bucket_s[k];
    }
    const double optimizer_start = std::max(tl.pipeline_end, comm_free);
    tl.dp_exposed_s = optimizer_start - tl.pipeline_end;
    tl.optimizer_s = cost.optimizer_s;
    tl.end = optimizer_start + cost.optimizer_s;
    tl.compute.push_back({TimelineOpKind::optimizer, 0, optimizer_start, tl.end});

    sim.pipeline_end = std::max(sim.pipeline_end, tl.pipeline_end);
    if (tl.end > sim.step_time_s) {
      sim.step_time_s = tl.end;
      sim.critical_stage = s;
    }
  }
  sim.idle_s.resize(p);
  for (std::size_t s = 0; s < p; ++s) {
    const StageTimeline& tl = sim.stages[s];
    sim.idle_s[s] = sim.pipeline_end - (tl.compute_s + tl.tp_s + tl.p2p_s);
  }
  return sim;
}

}  // namespace sb::costmodel
