// SPDX-License-Identifier: Apache-2.0
// What fine-tuning and pruning hold fixed while a run trains: the starting parameters of
// finetune.from (another run's checkpoint of the same model), the frozen backbone of
// finetune.freeze, and the magnitude-pruning mask of prune, computed once from the starting
// weights. The masked and frozen gradients are zeroed before the optimizer (so they leave the
// clipping norm and the optimizer state, as in PyTorch's pruning and requires_grad=False), and
// the parameters put back after it (weight decay would otherwise shrink frozen weights).
// Leaves out the pruning rule (compress/magnitude_pruning.hpp) and when the trainer calls it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <vector>

#include "compress/magnitude_pruning.hpp"
#include "plan/config.hpp"
#include "train/training_task.hpp"

namespace sb::train {

class ParameterConstraints {
 public:
  // Reads finetune.from, a file by now (checkpoint_source) (UserError naming the file for another model or a model-parallel
  // checkpoint); computes the masks from its weights. `load_start` copies its parameters and
  // BatchNorm statistics into the task (false when a checkpoint of this run is being resumed,
  // which holds the fine-tuned state). Same result on every data-parallel rank.
  ParameterConstraints(const plan::TrainConfig& config, TrainingTask& task, bool load_start);

  // Whether the config asks for any constraint (finetune or prune).
  static bool wanted(const plan::TrainConfig& config) { return !config.finetune.from.empty(); }

  // gradients (parameters_flat's size): zero where pruned or frozen.
  void constrain_gradients(std::span<float> gradients) const;
  // parameters: zero where pruned, the starting value where frozen.
  void constrain_parameters(std::span<float> parameters) const;
  // ... a shard of them: flat parameters [begin, begin + shard.size()) (ZeRO's fp32 master shard).
  void constrain_parameters(std::span<float> shard, std::int64_t begin) const;

  std::int64_t pruned() const { return pruned_; }
  std::int64_t frozen() const { return frozen_; }
  // The sparsity of the task's weight matrices now (exact zeros): what the run reached.
  compress::Sparsity sparsity() const;

 private:
  TrainingTask& task_;
  // per flat parameter: 0 trained, 1 pruned, 2 frozen
  std::vector<std::uint8_t> state_;
  std::vector<float> start_;  // (parameters) finetune.from's values, for the frozen ones
  std::int64_t pruned_ = 0, frozen_ = 0;
};

}  // namespace sb::train
