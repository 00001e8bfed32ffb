// SPDX-License-Identifier: Apache-2.0
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

// The pipeline part of a step in flight: each rank's op list, where it is in it, when it is
// free, and when each (micro-batch, chunk)'s activation and output gradient reach it, at
// [chunk·m + micro] (negative: not yet sent; rank 0's chunk-0 inputs and the last rank's
// last-chunk loss gradient are local).
struct PipelineState {
  std::size_t p, v;
  i64 m;
  std::vector<std::vector<plan::PipelineOp>> ops;
  std::vector<std::vector<double>> activation_at, gradient_at;
  std::vector<std::vector<bool>> forwarded;
  std::vector<std::size_t> next;
  std::vector<double> free_at;
  std::vector<std::vector<TimelineOp>> last_backward;  // per rank and chunk: backward(m − 1), for the buckets

  PipelineState(const StepSimulationInput& input, std::size_t ranks, i64 micro_batches)
      : p(ranks), v(static_cast<std::size_t>(input.interleave)), m(micro_batches), ops(ranks),
        activation_at(ranks, std::vector<double>(v * static_cast<std::size_t>(m), -1.0)), gradient_at(activation_at),
        forwarded(ranks, std::vector<bool>(v * static_cast<std::size_t>(m), false)), next(ranks, 0),
        free_at(ranks, 0.0), last_backward(ranks, std::vector<TimelineOp>(v)) {
    for (std::size_t s = 0; s < p; ++s)
      ops[s] = plan::pipeline_stage_ops(input.schedule, static_cast<int>(p), static_cast<int>(s), m, input.interleave);
    std::fill(activation_at[0].begin(), activation_at[0].begin() + m, 0.0);
  }
  std::size_t at(const plan::PipelineOp& op) const {
    return static_cast<std::size_t>(op.chunk * m + op.micro);
  }
  const StageOpCosts& cost(const StepSimulationInput& input, std::size_t s, const plan::PipelineOp& op) const {
    return input.stages[static_cast<std::size_t>(op.chunk) * p + s];
  }
};

// When rank s's next op can start, or a negative time while its message has not arrived.
double ready_time(const PipelineState& st, std::size_t s, const plan::PipelineOp& op) {
  const std::size_t i = st.at(op);
  if (op.kind == plan::PipelineOpKind::forward) {
    if (st.activation_at[s][i] < 0) return -1;
    return std::max(st.free_at[s], st.activation_at[s][i]);
  }
  SB_CHECK(st.forwarded[s][i], "stage {} runs backward({}) of chunk {} before its forward", s, op.micro, op.chunk);
  if (s + 1 == st.p && static_cast<std::size_t>(op.chunk) + 1 == st.v) return st.free_at[s];
  if (st.gradient_at[s][i] < 0) return -1;
  return std::max(st.free_at[s], st.gradient_at[s][i]);
}

// Runs rank s's op at `ready`: its compute and tp time, then the message it sends on (to the
// next rank's same chunk, or from the last rank to rank 0's next chunk; gradients back alike).
void run_op(PipelineState& st, std::size_t s, const plan::PipelineOp& op, double ready, const StageOpCosts& cost,
            StageTimeline& tl) {
  const std::size_t i = st.at(op);
  const auto chunk = static_cast<std::size_t>(op.chunk);
  const bool forward = op.kind == plan::PipelineOpKind::forward;
  const double compute = forward ? cost.forward_compute_s : cost.backward_compute_s;
  const double tp = forward ? cost.forward_tp_s : cost.backward_tp_s;
  const double gather = forward ? cost.forward_gather_s : cost.backward_gather_s;
  const double exchange =
      forward ? 0.0 : cost.backward_exchange_s + (op.micro == st.m - 1 ? cost.last_backward_exchange_s : 0.0);
  const TimelineOp done{forward ? TimelineOpKind::forward : TimelineOpKind::backward, op.micro, ready,
                        ready + compute + tp + gather + exchange, op.chunk};
  tl.compute.push_back(done);
  tl.compute_s += compute;
  tl.tp_s += tp;
  tl.gather_s += gather;
  tl.exchange_s += exchange;
  double end = done.end;
  if (forward) st.forwarded[s][i] = true;
  if (!forward && op.micro == st.m - 1) st.last_backward[s][chunk] = done;
  const bool sends = forward ? s + 1 < st.p || chunk + 1 < st.v : s > 0 || chunk > 0;
  if (sends) {
    const double message = forward ? cost.send_forward_s : cost.send_backward_s;
    tl.compute.push_back({forward ? TimelineOpKind::send_forward : TimelineOpKind::send_backward, op.micro, end,
                          end + message, op.chunk});
    end += message;
    tl.p2p_s += message;
    const std::size_t m = static_cast<std::size_t>(st.m);
    if (forward)
      (s + 1 < st.p ? st.activation_at[s + 1][i] : st.activation_at[0][i + m]) = end;
    else
      (s > 0 ? st.gradient_at[s - 1][i] : st.gradient_at[st.p - 1][i - m]) = end;
  }
  st.free_at[s] = end;
}

// An op's start depends only on its rank's previous op and one message, both fixed once
// known, so running every ready op, in any order, until none is gives exact times.
void run_pipeline(const StepSimulationInput& input, PipelineState& st, StepSimulation& sim) {
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t s = 0; s < st.p; ++s) {
      while (st.next[s] < st.ops[s].size()) {
        const plan::PipelineOp& op = st.ops[s][st.next[s]];
        const double ready = ready_time(st, s, op);
        if (ready < 0) break;
        run_op(st, s, op, ready, st.cost(input, s, op), sim.stages[s]);
        ++st.next[s];
        progress = true;
      }
    }
  }
  for (std::size_t s = 0; s < st.p; ++s)
    SB_CHECK(st.next[s] == st.ops[s].size(), "the {} schedule deadlocks on stage {} of {}",
             plan::to_string(input.schedule), s, st.p);
}

// After rank s's pipeline: each chunk's gradient buckets (its last backward produces them at an
// even rate; bucket k is ready once its last byte is; the comm stream runs one bucket at a time,
// the chunks in the order their last backwards end), then its optimizer over every chunk.
void finish_stage(const StepSimulationInput& input, const PipelineState& st, std::size_t s, StageTimeline& tl) {
  const i64 m = input.micro_batches;
  SB_CHECK(st.ops[s].back() == (plan::PipelineOp{plan::PipelineOpKind::backward, m - 1, 0}),
           "stage {} does not end with the last micro-batch's backward", s);
  tl.pipeline_end = st.free_at[s];
  tl.bubble_s = tl.pipeline_end - (tl.compute_s + tl.tp_s + tl.p2p_s + tl.gather_s + tl.exchange_s);
  tl.peak_in_flight = plan::count_peak_in_flight(st.ops[s]);
  std::vector<std::size_t> chunks(st.v);
  for (std::size_t c = 0; c < st.v; ++c) chunks[c] = c;
  std::sort(chunks.begin(), chunks.end(), [&](std::size_t a, std::size_t b) {
    return st.last_backward[s][a].end < st.last_backward[s][b].end;
  });
  double comm_free = 0, optimizer = 0, finish = 0, after_optimizer = 0;
  i64 bucket_index = 0;
  for (const std::size_t c : chunks) {
    const StageOpCosts& cost = input.stages[c * st.p + s];
    SB_CHECK(cost.bucket_bytes.size() == cost.bucket_s.size(), "stage {}: {} bucket sizes, {} times", s,
             cost.bucket_bytes.size(), cost.bucket_s.size());
    double total_bytes = 0;
    for (double b : cost.bucket_bytes) total_bytes += b;
    // without overlap every bucket waits for the rank's last backward (its chunk 0's)
    const bool overlap = input.overlap && !cost.buckets_after_backward;
    const TimelineOp& lb = st.last_backward[s][overlap ? c : 0];
    double produced = 0;
    for (std::size_t k = 0; k < cost.bucket_s.size(); ++k) {
      produced += cost.bucket_bytes[k];
      const double ready =
          overlap && total_bytes > 0 ? lb.start + (lb.end - lb.start) * (produced / total_bytes) : lb.end;
      const double start = std::max(ready, comm_free);
      comm_free = start + cost.bucket_s[k];
      tl.comm.push_back({TimelineOpKind::dp_bucket, bucket_index++, start, comm_free});
      tl.dp_s += cost.bucket_s[k];
    }
    optimizer += cost.optimizer_s;
    finish += cost.finish_exchange_s;
    after_optimizer += cost.after_optimizer_s;
  }
  const double optimizer_start = std::max(tl.pipeline_end, comm_free) + finish;
  tl.dp_exposed_s = optimizer_start - tl.pipeline_end;
  tl.optimizer_s = optimizer;
  tl.after_optimizer_s = after_optimizer;
  tl.compute.push_back({TimelineOpKind::optimizer, 0, optimizer_start, optimizer_start + optimizer});
  tl.end = optimizer_start + optimizer + after_optimizer;
}

}  // namespace

StepSimulation simulate_step(const StepSimulationInput& input) {
  const i64 m = input.micro_batches, v = input.interleave;
  SB_CHECK(v >= 1 && !input.stages.empty() && input.stages.size() % static_cast<std::size_t>(v) == 0,
           "step simulation of {} chunks, {} per rank", input.stages.size(), v);
  const std::size_t p = input.stages.size() / static_cast<std::size_t>(v);
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
    sim.idle_s[s] = sim.pipeline_end - (tl.compute_s + tl.tp_s + tl.p2p_s + tl.gather_s + tl.exchange_s);
  }
  return sim;
}

}  // namespace sb::costmodel
