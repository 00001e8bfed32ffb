// SPDX-License-Identifier: Apache-2.0
// One training step on every rank of a data-parallel group: this rank's forward and backward,
// the gradient exchange (bucketed all-reduce, or ZeRO-1 reduce-scatter), the global loss,
// clipping and the optimizer, and ZeRO-1's parameter all-gather; timed piece by piece. Leaves
// out evaluation, result files and progress (the trainer), and what model parallelism does
// inside forward/backward (the task: tp shards, pipeline stages).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/memory.hpp"
#include "kernels/kernels.hpp"
#include "optim/gradient_clipping.hpp"
#include "optim/loss_scaler.hpp"
#include "parallel/communicator.hpp"
#include "parallel/process_grid.hpp"
#include "plan/config.hpp"
#include "train/data_parallel.hpp"
#include "train/slowed_gradient_sync.hpp"
#include "train/storage_main_gradients.hpp"
#include "train/training_task.hpp"
#include "train/zero3_unit_gather.hpp"

namespace sb::train {

struct StepResult {
  double loss = 0, lr = 0, grad_norm = 0;  // loss: the mean over the global batch
  // the loss scale backward started from (1 without fp16 loss scaling); skipped: the gradients
  // overflowed, so the optimizer did not step (grad_norm is then inf or NaN)
  double loss_scale = 1;
  bool skipped = false;
  // on parallel::comm_clock_seconds(): start, end of backward (exchange included), end of the
  // loss all-reduce, end of the optimizer, end of the step
  double start_s = 0, backward_end_s = 0, loss_end_s = 0, optimizer_end_s = 0, end_s = 0;
  // this process's CPU time (all its threads) at start_s and at backward_end_s
  double cpu_start_s = 0, cpu_backward_end_s = 0;
  GradientExchangeFigures exchange;
  // inside forward/backward: tensor-parallel collectives, pipeline transfers and bubble
  double tp_comm_s = 0, p2p_s = 0, bubble_s = 0;
  std::vector<PipelineOpRecord> pipeline_ops;  // this stage's forwards and backwards
  double step_s() const { return end_s - start_s; }
  double compute_s() const {
    return backward_end_s - start_s - exchange.exposed_s - exchange.in_backward_s - tp_comm_s - p2p_s - bubble_s;
  }
  // The CPU time of compute_s: this process's CPU time from start until backward ended and the
  // exposed gradient exchange began, less its CPU time inside the exchange's calls during
  // backward (a rank polling in a collective burns CPU at whatever share it is given: both
  // waits are left out, measured), less the tensor- and pipeline-parallel waits at the share of
  // a CPU the rest had. The work itself, the scheduler's share taken out: ranks sharing cores
  // with each other or with other jobs differ in wall time by what the scheduler gives them
  // (36% on a shared two-core machine), not by their work; stragglers are judged by this.
  double compute_cpu_s() const {
    const double wall = compute_s() + tp_comm_s + p2p_s + bubble_s;
    return wall > 0 && compute_s() > 0 ? own_cpu_s() * compute_s() / wall : compute_s();
  }
  // the CPU time from start until backward ended and the exposed exchange began, the exchange's
  // calls inside backward left out
  double own_cpu_s() const {
    return (exchange.cpu_at_backward_end_s >= 0 ? exchange.cpu_at_backward_end_s : cpu_backward_end_s) - cpu_start_s -
           exchange.cpu_in_backward_s;
  }
  // data-parallel time not overlapped by compute: the exchange's calls inside backward and what
  // was left after it, the loss all-reduce, ZeRO-1's all-gather
  double comm_s() const {
    return exchange.in_backward_s + exchange.exposed_s + (loss_end_s - backward_end_s) + (end_s - optimizer_end_s);
  }
  double optimizer_s() const { return optimizer_end_s - loss_end_s; }
};

// This rank's optimizer state as a checkpoint sees it: named fp32 tensors over the flat
// parameter range [begin, begin + count) (the whole model, or this rank's ZeRO-1 shard), in
// flat order, and the optimizer's step count.
struct OptimizerState {
  std::string optimizer;                                          // adamw | sgd
  std::vector<std::pair<std::string, std::span<float>>> tensors;  // adamw: m, v (count); sgd: momentum (count)
  std::int64_t begin = 0, count = 0;
  std::function<std::int64_t()> step_count;
  std::function<void(std::int64_t)> set_step_count;
};

class ParameterConstraints;

class DistributedStep {
 public:
  // `task` trains this rank's place in `grid` (its dp group's size must be config.strategy.dp).
  // Broadcasts data-parallel rank 0's parameters so every replica starts from the same weights.
  // The clipping norm is the whole model's: summed over the model-parallel group (replicas
  // counted once) and, with ZeRO-1, over the data-parallel shards.
  DistributedStep(const plan::TrainConfig& config, TrainingTask& task, parallel::ProcessGrid& grid,
                  kernels::Backend backend, MemoryTracker& tracker);
  StepResult run(std::int64_t step, std::int64_t total_steps);
  // Fine-tuning and pruning (parameter_constraints.hpp): gradients masked before the optimizer,
  // parameters after it. Null (the default) for none; it must outlive the step.
  void set_parameter_constraints(const ParameterConstraints* constraints) { constraints_ = constraints; }
  // Steps skipped for overflowed gradients so far (fp16 loss scaling).
  std::int64_t skipped_steps() const { return scaler_ ? scaler_->skipped_steps() : 0; }
  // For checkpoints: the optimizer's state (read and restored in place) and the fp16 loss
  // scaler (null without loss scaling).
  OptimizerState& optimizer_state() { return optimizer_state_; }
  optim::LossScaler* loss_scaler() { return scaler_ ? &*scaler_ : nullptr; }
  // fp16 loss scaling: a non-finite gradient norm skips the step; otherwise run() leaves it in
  // StepResult::grad_norm (skipped, no update) for the caller to stop on.
  bool scales_loss() const { return scaler_.has_value(); }
  // ZeRO-3, and ZeRO-1 and 2 under mixed precision (nothing otherwise): every parameter (fp32
  // master weight) gathered into parameters_flat() for a reader of all of them (a checkpoint's
  // write), and given back after it; parameters_loaded() takes this rank's shard from
  // parameters_flat() once something wrote all of them (a resume, fine-tuning's start), after
  // the task's parameters_updated() rounded them into the 16-bit weights.
  void gather_all_parameters();
  void release_all_parameters();
  void parameters_loaded();

 private:
  void finish_queued_work() const;
  void slow_the_exchange_if_asked(TrainingTask& task);
  void shard_parameters(TrainingTask& task, MemoryTracker& tracker);
  void keep_sixteen_bit_main_gradients(TrainingTask& task, MemoryTracker& tracker,
                                       StorageMainGradients::Reduction reduction);
  std::optional<SixteenBitWeights> sixteen_bit_weights_to_gather(TrainingTask& task) const;
  void shard_master_weights(TrainingTask& task, MemoryTracker& tracker);
  void round_storage_shard();  // ZeRO-3, mixed precision: the fp32 shard into the 16-bit one
  Zero3UnitGather* master_gather() const;  // what gathers the fp32 master weights whole

  const plan::TrainConfig& config_;
  TrainingTask& task_;
  Device device_;  // where the task's parameters, gradients and the optimizer state live
  parallel::Communicator& dp_;
  parallel::Communicator& tp_;
  std::unique_ptr<BucketedAllReduce> all_reduce_;
  std::unique_ptr<ZeroSharding> zero_;
  std::unique_ptr<StorageMainGradients> storage_;  // precision.main_grads storage (16-bit)
  std::unique_ptr<Zero3UnitGather> unit_gather_;  // ZeRO-3: the model's units from the shards
  TrackedBuffer storage_shard_;                    // ZeRO-3, mixed precision: the 16-bit shard
  // ZeRO-1, 2 and 3 under mixed precision: the fp32 master weights gathered whole from the shards
  // (checkpoints)
  std::unique_ptr<Zero3UnitGather> master_gather_;
  std::unique_ptr<SlowedGradientSync> slowed_sync_;  // SB_INJECT_FAILURE=R:S:slowP on this rank (tests)
  // lr, scaling -> gradient norm before clipping (not finite: skipped)
  std::function<double(double, const optim::GradientScaling&)> optimizer_step_;
  OptimizerState optimizer_state_;
  std::optional<optim::LossScaler> scaler_;  // fp16 with loss scaling
  std::int64_t inject_overflow_step_ = 0;    // SB_INJECT_OVERFLOW: that step's gradients made inf (tests)
  int world_rank_ = 0;
  double unslowed_compute_cpu_s_ = 0;  // the last step's compute_cpu_s, an injected slowdown left out (tests)
  const ParameterConstraints* constraints_ = nullptr;
};

}  // namespace sb::train
