// SPDX-License-Identifier: Apache-2.0
// Pipeline-parallel schedules as data: for p stages and m micro-batches, the ordered forward and
// backward operations each stage performs in one training step, with their memory and bubble
// figures and a unit-time simulation that checks them. Pure: no MPI, no model. Leaves out
// executing the operations (pipeline_executor.hpp).
//
// GPipe: every forward in micro-batch order, then every backward, also in micro-batch order
// (0, 1, ..., m−1; the GPipe paper draws them in reverse). In order, the gradient of each
// parameter is accumulated micro-batch 0 first, exactly as one rank accumulating m
// micro-batches does and as 1F1B does, so both schedules sum in the same order; the order
// changes neither the peak memory (all m activation sets are alive) nor the bubble.
//
// 1F1B (PipeDream-Flush, Megatron's non-interleaved schedule): stage s runs
// w = min(p − s − 1, m) warm-up forwards, then alternates one forward and one backward until
// every forward is done, then the remaining w backwards (cool-down). Backwards are in
// micro-batch order. Stage s never holds more than min(p − s, m) micro-batches' activations.
//
// Interleaved 1F1B (Narayanan et al. 2021 §2.2; Megatron-LM's
// forward_backward_pipelining_with_interleaving): the model is cut into p·v chunks and rank r
// holds chunks r, r + p, r + 2p, … (its local chunks 0 .. v − 1). Each rank runs m·v virtual
// micro-batches; virtual index k is micro-batch (k / pv)·p + k mod p of local chunk
// (k mod pv) / p for a forward and v − 1 − (k mod pv) / p for a backward (micro-batches go
// through the chunks in groups of p, so m must be a multiple of p). Rank r runs
// w = min((p − r − 1)·2 + (v − 1)·p, m·v) warm-up forwards, then one forward and one backward
// until every forward is done, then the remaining w backwards. Each chunk's backwards are in
// micro-batch order, so gradients accumulate micro-batch 0 first as above. The ideal bubble
// shrinks v-fold: (p − 1)/(v·m) of the compute time.
//
// Both schedules have the same ideal bubble: with every stage taking tf per forward and tb
// per backward and free communication, the step lasts (m + p − 1)(tf + tb), of which each
// stage computes m(tf + tb), so each stage idles a fraction (p − 1)/(m + p − 1).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace sb::plan {

enum class PipelineSchedule { gpipe, one_f_one_b };
std::string_view to_string(PipelineSchedule schedule);  // "gpipe", "1f1b"
// "gpipe" or "1f1b"; throws UserError naming the accepted values for any other.
PipelineSchedule pipeline_schedule_from_string(std::string_view name);

enum class PipelineOpKind { forward, backward };

struct PipelineOp {
  PipelineOpKind kind = PipelineOpKind::forward;
  std::int64_t micro = 0;  // micro-batch index in [0, m)
  std::int64_t chunk = 0;  // the rank's local model chunk in [0, v) (0 without interleaving)
  bool operator==(const PipelineOp&) const = default;
};

// The 2m·v operations of `stage` (0-based, < stages; the pp rank) in execution order, with v =
// `interleave` model chunks per rank (1: the plain schedules; more: interleaved 1F1B, which
// needs schedule 1f1b, stages > 1 and micro_batches a multiple of stages). Every forward and
// every backward of [0, m) × [0, v) appears exactly once; per chunk, forwards in micro-batch
// order, as do backwards.
std::vector<PipelineOp> pipeline_stage_ops(PipelineSchedule schedule, int stages, int stage,
                                           std::int64_t micro_batches, std::int64_t interleave = 1);

// The most micro-batches whose forward has run on `stage` but whose backward has not, at any
// point of the schedule: the activation sets the stage must hold. GPipe m; 1F1B min(p − s, m).
std::int64_t pipeline_peak_in_flight(PipelineSchedule schedule, int stages, int stage,
                                     std::int64_t micro_batches);
// The same for local chunk `chunk` of `stage` under interleave v (counted from the list): the
// activation sets that chunk's model must hold.
std::int64_t pipeline_chunk_peak_in_flight(PipelineSchedule schedule, int stages, int stage,
                                           std::int64_t micro_batches, std::int64_t interleave,
                                           std::int64_t chunk);
// pipeline_chunk_peak_in_flight of each of the stage's `interleave` chunks, from one walk of its
// operation list.
std::vector<std::int64_t> pipeline_chunk_peaks_in_flight(PipelineSchedule schedule, int stages, int stage,
                                                         std::int64_t micro_batches, std::int64_t interleave);

// The same, counted by walking the operation list (the tests check the closed form above);
// all chunks together, or one chunk's ops only.
std::int64_t count_peak_in_flight(const std::vector<PipelineOp>& ops);
std::int64_t count_peak_in_flight(const std::vector<PipelineOp>& ops, std::int64_t chunk);

// (p − 1)/(m + p − 1): the fraction of a step each stage idles with balanced stages.
double pipeline_ideal_bubble_fraction(int stages, std::int64_t micro_batches);

// (p − 1)/(v·m): the interleaved schedule's ideal bubble as a fraction of the compute time
// (Narayanan et al. 2021 §2.2); v = 1 gives (p − 1)/m.
double pipeline_interleaved_bubble_ratio(int stages, std::int64_t micro_batches, std::int64_t interleave);

// ---- a discrete-event simulation of one step ------------------------------------------------
// Every stage executes its operation list in order; an operation starts when the stage is free
// and its input exists: forward(i, c) on stage s needs forward(i, c) done on s − 1 (on stage 0,
// chunk c > 0 needs forward(i, c − 1) on the last stage), backward(i, c) needs backward(i, c)
// done on s + 1 (on the last stage, chunk c < v − 1 needs backward(i, c + 1) on stage 0) and
// its own forward(i, c). Messages take `transfer` time units. v is the largest chunk + 1 in
// the lists; each chunk of a stage takes that stage's forward and backward times.
struct PipelineSimulation {
  bool completed = false;  // false: some stage waits forever (the schedule deadlocks)
  double makespan = 0;     // the last operation's end, all stages starting at 0
  // per stage: compute time, and the start and end of each op in the stage's list order
  std::vector<double> busy;
  std::vector<std::vector<double>> op_start, op_end;
  // per stage: 1 − busy / makespan
  std::vector<double> idle_fraction;
};

PipelineSimulation simulate_pipeline(PipelineSchedule schedule, int stages,
                                     std::int64_t micro_batches, double forward_time,
                                     double backward_time, double transfer = 0.0);
// Interleaved 1F1B with v chunks per stage, each chunk taking forward_time and backward_time.
PipelineSimulation simulate_interleaved_pipeline(int stages, std::int64_t micro_batches,
                                                 std::int64_t interleave, double forward_time,
                                                 double backward_time, double transfer = 0.0);
// The same with each stage's own forward and backward time (unbalanced stages: the bubble a
// measured step should be compared with).
PipelineSimulation simulate_pipeline(PipelineSchedule schedule, std::int64_t micro_batches,
                                     const std::vector<double>& forward_time,
                                     const std::vector<double>& backward_time,
                                     double transfer = 0.0);
// The same for any operation lists, one per stage (a schedule under test).
PipelineSimulation simulate_pipeline_ops(const std::vector<std::vector<PipelineOp>>& ops,
                                         std::int64_t micro_batches, double forward_time,
                                         double backward_time, double transfer = 0.0);
PipelineSimulation simulate_pipeline_ops(const std::vector<std::vector<PipelineOp>>& ops,
                                         std::int64_t micro_batches,
                                         const std::vector<double>& forward_time,
                                         const std::vector<double>& backward_time,
                                         double transfer = 0.0);

}  // namespace sb::plan
