// SPDX-License-Identifier: Apache-2.0
// Runs one training step's pipeline schedule on this rank's stage over the pipeline
// communicator: non-blocking receives of input activations (from stage − 1) and output
// gradients (from stage + 1) posted ahead, the stage's forward and backward, non-blocking sends
// of the output activation (straight from its slot) and of the input gradient; and the step's
// timeline: compute, point-to-point transfer, bubble, bytes, activation slots in use. Leaves out
// zeroing and averaging the gradients, the optimizer and the loss broadcast (the caller's: the
// executor is the pipeline phase of a step), data parallelism across pipelines, and device
// buffers: messages are host memory (a GPU stage stages them, gpt_pipeline_stage.hpp), so they
// travel over MPI even on a communicator that sends device buffers through NCCL, whose queued
// receives could not be posted this far ahead.
// Under interleaving the rank holds v model chunks (local chunk k is model chunk k·p + rank):
// chunk k's input comes from the previous rank's chunk k, or on rank 0 from the last rank's
// chunk k − 1 (its gradient goes back the same way), and every message's tag names its
// (micro-batch, receiving chunk).
//
// How waiting is split (all on parallel::comm_clock_seconds()):
//   wall      = the step's end − entry into run_step(). The step ends when the first stage's
//               last backward (the step's last operation: it depends on every other) is done
//               and its sends have completed; the first stage then tells the others (a 4-byte
//               message each), so every stage's wall includes the pipeline's drain.
//   forward, backward = Σ the stage's compute, each op fenced (Kokkos::fence).
//   wait_i    = time blocked before op i for its message; plus, once, the time blocked at the
//               end for this stage's sends to complete and for the first stage's end.
//   transfer_i = the modelled time of moving that message, latency + bytes / bandwidth
//               (measured at construction by a ping-pong of the real message sizes between
//               neighbouring stages, or given in the options).
//   p2p       = Σ min(wait_i, transfer_i): a wait no longer than the message's own transfer is
//               exposed communication; whatever is longer was spent waiting for the other stage
//               to produce the message (the pipeline's fill and drain, and imbalance). The wait
//               for the first stage's end counts as bubble entirely.
//   bubble    = wall − forward − backward − p2p: that waiting for data, plus the executor's
//               bookkeeping (microseconds). With balanced stages and free communication it is
//               the ideal (p − 1)/(m + p − 1) of the wall time on every stage.
//   idle      = wall − forward − backward = bubble + p2p.
// A rank waiting for a message polls (Request::test) and yields the CPU between polls, so
// ranks sharing cores with a computing rank take little of its time; it still occupies a core
// when no other work wants one.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/memory.hpp"
#include "parallel/communicator.hpp"
#include "plan/pipeline_schedule.hpp"
#include "train/pipeline_stage.hpp"

namespace sb::train {

struct PipelineExecutorOptions {
  // The transfer model: seconds = p2p_latency_s + bytes / p2p_bandwidth_bytes_per_s. When
  // either is negative, each message size this stage receives is timed instead (half the
  // median round trip of a ping-pong with that neighbour, at construction).
  double p2p_latency_s = -1;
  double p2p_bandwidth_bytes_per_s = -1;
  int ping_pong_repetitions = 20;
  // Receives posted ahead per direction (one buffer each, tracked as comm memory).
  int receive_depth = 2;
};

// One operation of the step as this stage ran it.
struct PipelineOpRecord {
  plan::PipelineOp op;
  std::int64_t slot = 0;
  double wait_start_s = 0;  // began waiting for the op's message (= start_s when none)
  double start_s = 0, end_s = 0;  // the compute
  double transfer_s = 0;    // the modelled transfer of its message (0 when none)
};

struct PipelineStepFigures {
  double start_s = 0, end_s = 0;
  double forward_s = 0, backward_s = 0;
  double wait_s = 0, p2p_s = 0;
  std::int64_t bytes_sent = 0, bytes_received = 0;
  std::int64_t peak_slots_in_use = 0;       // micro-batches held at once, all chunks together
  std::int64_t peak_activation_bytes = 0;   // the most Σ slots in use × slot_activation_bytes at once
  double loss = std::numeric_limits<double>::quiet_NaN();  // mean over micro-batches, last stage
  std::vector<PipelineOpRecord> ops;        // in execution order

  double wall_s() const { return end_s - start_s; }
  double compute_s() const { return forward_s + backward_s; }
  double idle_s() const { return wall_s() - compute_s(); }
  double bubble_s() const { return wall_s() - compute_s() - p2p_s; }
  double bubble_fraction() const { return wall_s() > 0 ? bubble_s() / wall_s() : 0.0; }
};

class PipelineExecutor {
 public:
  // This rank is stage pp.rank() of pp.size(). Collective over pp (the transfer-model
  // ping-pong, unless the options give the model). The stage must hold at least
  // pipeline_peak_in_flight activation slots; pp and stage must outlive the executor.
  PipelineExecutor(parallel::Communicator& pp, PipelineStage& stage, plan::PipelineSchedule schedule,
                   std::int64_t micro_batches, MemoryTracker& tracker,
                   PipelineExecutorOptions options = {});
  // Interleaved: chunks[k] is this rank's local chunk k (v = chunks.size() > 1 needs schedule
  // 1f1b and micro_batches a multiple of pp.size()); each holds at least its
  // pipeline_chunk_peak_in_flight slots. Chunks' messages may differ in size (the ResNet's chunk
  // boundaries do); each neighbouring pair of chunks agrees on its own.
  PipelineExecutor(parallel::Communicator& pp, std::vector<PipelineStage*> chunks, plan::PipelineSchedule schedule,
                   std::int64_t micro_batches, MemoryTracker& tracker, PipelineExecutorOptions options = {});
  ~PipelineExecutor();
  PipelineExecutor(const PipelineExecutor&) = delete;
  PipelineExecutor& operator=(const PipelineExecutor&) = delete;

  // One step: every operation of this stage's schedule; returns when its sends completed.
  // Collective over pp. Gradients accumulate into whatever the stage holds (zero them
  // before, average after).
  PipelineStepFigures run_step();

  int stage() const { return stage_; }
  int stages() const { return stages_; }
  plan::PipelineSchedule schedule() const { return schedule_; }
  std::int64_t micro_batches() const { return micro_batches_; }
  std::int64_t interleave() const { return static_cast<std::int64_t>(chunks_.size()); }
  const std::vector<plan::PipelineOp>& ops() const { return ops_; }
  // The transfer model's time for the activation received from the previous stage and for
  // the gradient received from the next (0 where there is no such neighbour).
  double input_transfer_s() const { return input_transfer_s_; }
  double gradient_transfer_s() const { return gradient_transfer_s_; }

 private:
  class Mailbox;  // receives posted ahead in one direction
  struct SendBuffer;

  void measure_transfers(const PipelineExecutorOptions& options);
  const void* send_gradient(const plan::PipelineOp& op, PipelineStepFigures& figures);
  // Whether an op reads a message (a forward its input, a backward its output's gradient) and
  // whether it sends one; not for the model's first chunk's input and last chunk's gradient.
  bool receives(const plan::PipelineOp& op) const;
  bool sends(const plan::PipelineOp& op) const;
  // The rank and tag of the message op sends: to the next chunk in model order.
  int activation_peer() const { return (stage_ + 1) % stages_; }
  int gradient_peer() const { return (stage_ + stages_ - 1) % stages_; }
  int sent_activation_tag(const plan::PipelineOp& op) const;
  int sent_gradient_tag(const plan::PipelineOp& op) const;

  parallel::Communicator& pp_;
  std::vector<PipelineStage*> chunks_;
  plan::PipelineSchedule schedule_;
  std::int64_t micro_batches_;
  MemoryTracker& tracker_;
  int stage_, stages_;
  std::vector<plan::PipelineOp> ops_;
  double input_transfer_s_ = 0, gradient_transfer_s_ = 0;
  std::unique_ptr<Mailbox> inputs_, gradients_;
  std::vector<SendBuffer> gradient_sends_;           // a pool: grows while every buffer is in flight
  // per chunk and slot: its output on its way
  std::vector<std::vector<parallel::Request>> activation_sends_;
};

// Message tags on the pipeline communicator: distinct per direction, micro-batch and the
// receiving rank's local chunk (of `interleave` per rank).
int pipeline_activation_tag(std::int64_t micro, std::int64_t chunk = 0, std::int64_t interleave = 1);
int pipeline_gradient_tag(std::int64_t micro, std::int64_t chunk = 0, std::int64_t interleave = 1);

}  // namespace sb::train
