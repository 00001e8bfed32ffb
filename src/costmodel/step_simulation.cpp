// simulate_step: the stages' op lists from plan/pipeline_schedule.hpp run against each other
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

namespace {

// The pipeline part of a step in flight: each stage's op list, where it is in it, when it is
// free, and when each micro-batch's activation (from s − 1) and output gradient (from s + 1)
// reach it (negative: not yet sent; stage 0's inputs and the last stage's loss gradient are
// local).
struct PipelineState {
  std::vector<std::vector<plan::PipelineOp>> ops;
  std::vector<std::vector<double>> activation_at, gradient_at;
  std::vector<std::vector<bool>> forwarded;
  std::vector<std::size_t> next;
  std::vector<double> free_at;
  std::vector<TimelineOp> last_backward;  // compute part of backward(m − 1), for the buckets

  PipelineState(const StepSimulationInput& input, std::size_t p, i64 m)
      : ops(p), activation_at(p, std::vector<double>(static_cast<std::size_t>(m), -1.0)),
        gradient_at(activation_at), forwarded(p, std::vector<bool>(static_cast<std::size_t>(m), false)),
        next(p, 0), free_at(p, 0.0), last_backward(p) {
    for (std::size_t s = 0; s < p; ++s)
      ops[s] = plan::pipeline_stage_ops(input.schedule, static_cast<int>(p), static_cast<int>(s), m);
    std::fill(activation_at[0].begin(), activation_at[0].end(), 0.0);
  }
};

// When stage s's next op can start, or a negative time while its message has not arrived.
double ready_time(const PipelineState& st, std::size_t s, std::size_t p, const plan::PipelineOp& op) {
  const auto i = static_cast<std::size_t>(op.micro);
  if (op.kind == plan::PipelineOpKind::forward) {
    if (st.activation_at[s][i] < 0) return -1;
    return std::max(st.free_at[s], st.activation_at[s][i]);
  }
  SB_CHECK(st.forwarded[s][i], "stage {} runs backward({}) before its forward", s, i);
  if (s + 1 == p) return st.free_at[s];
  if (st.gradient_at[s][i] < 0) return -1;
  return std::max(st.free_at[s], st.gradient_at[s][i]);
}

// Runs stage s's op at `ready`: its compute and tp time, then the message it sends on.
void run_op(PipelineState& st, std::size_t s, std::size_t p, i64 m, const plan::PipelineOp& op, double ready,
            const StageOpCosts& cost, StageTimeline& tl) {
  const auto i = static_cast<std::size_t>(op.micro);
  const bool forward = op.kind == plan::PipelineOpKind::forward;
  const double compute = forward ? cost.forward_compute_s : cost.backward_compute_s;
  const double tp = forward ? cost.forward_tp_s : cost.backward_tp_s;
  const TimelineOp done{forward ? TimelineOpKind::forward : TimelineOpKind::backward, op.micro, ready,
                        ready + compute + tp};
  tl.compute.push_back(done);
  tl.compute_s += compute;
  tl.tp_s += tp;
  double end = done.end;
  if (forward) st.forwarded[s][i] = true;
  if (!forward && op.micro == m - 1) st.last_backward[s] = done;
  const bool sends = forward ? s + 1 < p : s > 0;
  if (sends) {
    const double message = forward ? cost.send_forward_s : cost.send_backward_s;
    tl.compute.push_back({forward ? TimelineOpKind::send_forward : TimelineOpKind::send_backward, op.micro, end,
                          end + message});
    end += message;
    tl.p2p_s += message;
    (forward ? st.activation_at[s + 1][i] : st.gradient_at[s - 1][i]) = end;
  }
  st.free_at[s] = end;
}

// An op's start depends only on its stage's previous op and one message, both fixed once
// known, so running every ready op, in any order, until none is gives exact times.
void run_pipeline(const StepSimulationInput& input, PipelineState& st, StepSimulation& sim) {
  const std::size_t p = input.stages.size();
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t s = 0; s < p; ++s) {
      while (st.next[s] < st.ops[s].size()) {
        const plan::PipelineOp& op = st.ops[s][st.next[s]];
        const double ready = ready_time(st, s, p, op);
        if (ready < 0) break;
        run_op(st, s, p, input.micro_batches, op, ready, input.stages[s], sim.stages[s]);
        ++st.next[s];
        progress = true;
      }
    }
  }
  for (std::size_t s = 0; s < p; ++s)
    SB_CHECK(st.next[s] == st.ops[s].size(), "the {} schedule deadlocks on stage {} of {}",
             plan::to_string(input.schedule), s, p);
}

// After stage s's pipeline: its gradient buckets (the backward produces gradients at an even
// rate; bucket k is ready once its last byte is; the comm stream runs one bucket at a time),
// then its optimizer.
void finish_stage(const StepSimulationInput& input, const PipelineState& st, std::size_t s, StageTimeline& tl) {
  const StageOpCosts& cost = input.stages[s];
  const i64 m = input.micro_batches;
  SB_CHECK(cost.bucket_bytes.size() == cost.bucket_s.size(), "stage {}: {} bucket sizes, {} times", s,
           cost.bucket_bytes.size(), cost.bucket_s.size());
  SB_CHECK(st.ops[s].back() == (plan::PipelineOp{plan::PipelineOpKind::backward, m - 1}),
           "stage {} does not end with the last micro-batch's backward", s);
  tl.pipeline_end = st.free_at[s];
  tl.bubble_s = tl.pipeline_end - (tl.compute_s + tl.tp_s + tl.p2p_s);
  tl.peak_in_flight = plan::count_peak_in_flight(st.ops[s]);
  double total_bytes = 0;
  for (double b : cost.bucket_bytes) total_bytes += b;
  const TimelineOp& lb = st.last_backward[s];
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
}

}  // namespace

StepSimulation simulate_step(const StepSimulationInput& input) {
  const std::size_t p = input.stages.size();
  const i64 m = input.micro_batches;
  SB_CHECK(p >= 1 && m >= 1, "step simulation of {} stages and {} micro-batches", p, m);
  StepSimulation sim;
  sim.stages.resize(p);
  PipelineState state(input, p, m);
  run_pipeline(input, state, sim);
  for (std::size_t s = 0; s < p; ++s) {
    StageTimeline& tl = sim.stages[s];
    finish_stage(input, state, s, tl);
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
