// SPDX-License-Identifier: Apache-2.0
// An event simulation of one training step on every rank: each pipeline stage runs the
// trainer's own operation order (train/pipeline_schedule.hpp) of micro-batch forwards and
// backwards, each with its tensor-parallel collectives inside it; a stage sends its output (or
// its input gradient) to its neighbour after the op and the neighbour's op cannot start before
// that op ended + α + S/B (the sender waits for it too, unless p2p_overlap); the data-parallel gradient buckets launch on a separate comm stream
// as the backward of the last micro-batch produces them (under ZeRO-2 and 3 every micro-batch's
// backward), overlapping the rest of it, one bucket at a time; then the optimizer. All dp × tp
// ranks of one stage do the same work at the same times, so one timeline per stage stands for
// each of them (rank_stage maps a world rank to it).
//
// The costs of each op come from the caller (step_prediction.cpp builds them from the analytic
// per-layer FLOPs, bytes and link costs); this file only orders them in time. Under
// interleaving (v model chunks per rank) each rank runs the interleaved 1F1B order over its
// chunks, chunk c of rank s costing stages[c·p + s], and each chunk's buckets launch as its own
// last backward produces them; ZeRO-1's one reduction waits for the last backward, and its
// parameters' gather (ZeRO-2's too) follows the optimizer.
//
// Stages that share a node share its memory system: an op's compute runs at its `alone` cost
// while only its own stage's ranks compute there and at its busy cost while all of the node's
// ranks do, in between in proportion to the ranks computing (a pipeline's stages take turns, so
// on a node of several stages part of each op runs with the others idle). The simulation moves
// through time event by event and re-prices every running op when the node's load changes.
// Leaves out link contention between concurrent messages and jitter, and the optimizer's and
// dp buckets' share of the node's load: they take exactly their cost.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/pipeline_schedule.hpp"

namespace sb::costmodel {

// What one rank of a stage spends on one micro-batch, and on its gradients once per step.
struct StageOpCosts {
  double forward_compute_s = 0, backward_compute_s = 0;  // GEMMs and element-wise work
  // The same compute with only this stage's ranks computing on the node; negative: as above
  double forward_compute_alone_s = -1, backward_compute_alone_s = -1;
  double forward_tp_s = 0, backward_tp_s = 0;            // tp collectives inside the op (blocking)
  // ZeRO-3: the op's waits for its units' parameter gathers, the part the prefetch behind each
  // unit's compute does not hide
  double forward_gather_s = 0, backward_gather_s = 0;
  // ZeRO-3 under pipeline parallelism: the chunk's parameters gathered once, in its first
  // micro-batch's forward, and held through the step (no gather in later forwards or backwards)
  bool gathers_once = false;
  double send_forward_s = 0;   // α + S/B of the activation to stage + 1 (0 on the last stage)
  double send_backward_s = 0;  // α + S/B of the input gradient to stage − 1 (0 on the first)
  // The exchange's own passes over the gradients on the compute stream (costmodel/exchange_work.hpp):
  // inside every micro-batch's backward, and once more inside the last one's
  double backward_exchange_s = 0, last_backward_exchange_s = 0;
  // The dp reduction of this stage's gradients, bucket by bucket in the order the backward
  // produces them: bucket_bytes[k] bytes taking bucket_s[k] seconds. Empty: nothing to reduce.
  std::vector<double> bucket_bytes, bucket_s;
  bool buckets_after_backward = false;  // ZeRO-1: reduced after the last backward, not beside it
  // ZeRO-2 and 3: every micro-batch's backward reduces its gradients, bucket by bucket (they are
  // not held whole to accumulate), not only the last one's
  bool buckets_every_micro_batch = false;
  double finish_exchange_s = 0;  // after the last bucket, before the optimizer (sums back, scaling)
  double optimizer_s = 0;
  double after_optimizer_s = 0;  // ZeRO-1 and 2: the updated parameters' gather
};

struct StepSimulationInput {
  plan::PipelineSchedule schedule = plan::PipelineSchedule::one_f_one_b;
  std::int64_t micro_batches = 1;
  std::int64_t interleave = 1;       // model chunks per rank (v)
  std::vector<StageOpCosts> stages;  // per model chunk in pipeline order (p·v), at least one
  // true: bucket k launches when the last micro-batch's backward has produced it; false: one
  // reduction of everything after that backward ends (the buckets still run back to back).
  bool overlap = true;
  // true: a stage's sends run beside its compute (Megatron-LM's overlap_p2p_comm), the stage
  // going on to its next op at once; false: it waits until its message has arrived (the
  // trainer's blocking sends). The receiver waits for the message either way.
  bool p2p_overlap = false;
  // Who shares a node: per pp rank, the node its ranks sit on (empty: not known, every op at its
  // busy cost), how many of a stage's ranks sit on one node, and how many ranks compute at once
  // in the busy costs. A stage's op runs at (alone + (busy − alone)·(k − 1)/(node_ranks − 1))
  // with k ranks of its node computing.
  std::vector<int> stage_node;
  int stage_ranks_per_node = 1;
  int node_ranks = 1;
};

enum class TimelineOpKind { forward, backward, send_forward, send_backward, dp_bucket, optimizer };
const char* to_string(TimelineOpKind kind);

struct TimelineOp {
  TimelineOpKind kind = TimelineOpKind::forward;
  std::int64_t index = 0;  // micro-batch (forward, backward, sends; dp_bucket: the backward whose buckets it runs)
  double start = 0, end = 0;
  std::int64_t chunk = 0;  // the rank's local model chunk
};

// One stage's (pp rank's, all its chunks) step, the same on each of its dp × tp ranks.
struct StageTimeline {
  std::vector<TimelineOp> compute;  // compute stream: forwards, backwards, sends, optimizer
  // the dp stream's gradient buckets, one op for each backward's (its first bucket's start to its
  // last one's end); under p2p_overlap the sends too (on a stream of their own)
  std::vector<TimelineOp> comm;
  double compute_s = 0, tp_s = 0, p2p_s = 0;  // compute-stream busy time by part
  double gather_s = 0;                          // ... and ZeRO-3's exposed parameter gathers
  double exchange_s = 0;                        // ... and the exchange's passes inside backward
  double pipeline_end = 0;    // end of the stage's last backward
  double bubble_s = 0;        // compute stream idle before pipeline_end
  double dp_s = 0;            // the buckets' total time
  double dp_exposed_s = 0;    // how long the optimizer waited for the last bucket (and the finish)
  double optimizer_s = 0;
  double after_optimizer_s = 0;  // the parameters' gather after the optimizer
  double end = 0;             // the step's end: the optimizer's, or that gather's
  std::int64_t peak_in_flight = 0;  // most micro-batches forwarded and not yet backwarded
};

struct StepSimulation {
  std::vector<StageTimeline> stages;  // per pp rank
  double step_time_s = 0;     // max over ranks of their end
  double pipeline_end = 0;    // max over stages of pipeline_end (stage 0's, by dependencies)
  std::size_t critical_stage = 0;  // the stage whose end is the step time (lowest on ties)
  // Per stage: pipeline_end − the stage's busy time (compute + tp + p2p), the idle share of
  // the pipeline phase that (p − 1)/(m + p − 1) predicts for balanced stages and free messages.
  std::vector<double> idle_s;
};

StepSimulation simulate_step(const StepSimulationInput& input);

// The stage of world rank `rank` in the grid order of the trainer (tp fastest, then dp, pp).
int rank_stage(int rank, int dp, int tp);

}  // namespace sb::costmodel
