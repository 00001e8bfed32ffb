// One training step on every rank of a data-parallel group: this rank's forward and backward,
// the gradient exchange (bucketed all-reduce, or ZeRO-1 reduce-scatter), the global loss,
// clipping and the optimizer, and ZeRO-1's parameter all-gather; timed piece by piece. Leaves
// out evaluation, result files and progress (the trainer), and model parallelism.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "core/memory.hpp"
#include "kernels/kernels.hpp"
#include "parallel/communicator.hpp"
#include "train/config.hpp"
#include "train/data_parallel.hpp"
#include "train/training_task.hpp"

namespace sb::train {

struct StepResult {
  double loss = 0, lr = 0, grad_norm = 0;  // loss: the mean over the global batch
  // on parallel::comm_clock_seconds(): start, end of backward (exchange included), end of the
  // loss all-reduce, end of the optimizer, end of the step
  double start_s = 0, backward_end_s = 0, loss_end_s = 0, optimizer_end_s = 0, end_s = 0;
  GradientExchangeFigures exchange;
  double step_s() const { return end_s - start_s; }
  double compute_s() const { return backward_end_s - start_s - exchange.exposed_s; }
  double comm_s() const { return exchange.exposed_s + (loss_end_s - backward_end_s) + (end_s - optimizer_end_s); }
  double optimizer_s() const { return optimizer_end_s - loss_end_s; }
};

class DistributedStep {
 public:
  // `dp` is the data-parallel group (its size must be config.strategy.dp) and `task` trains this
  // rank's shard. Broadcasts rank 0's parameters so every rank starts from the same weights.
  DistributedStep(const TrainConfig& config, TrainingTask& task, parallel::Communicator& dp,
                  kernels::Backend backend, MemoryTracker& tracker);
  StepResult run(std::int64_t step, std::int64_t total_steps);

 private:
  const TrainConfig& config_;
  TrainingTask& task_;
  parallel::Communicator& dp_;
  std::unique_ptr<BucketedAllReduce> all_reduce_;
  std::unique_ptr<ZeroOneSharding> zero_;
  std::function<double(double)> optimizer_step_;  // lr -> gradient norm before clipping
};

}  // namespace sb::train
