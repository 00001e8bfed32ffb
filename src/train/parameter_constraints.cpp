// SPDX-License-Identifier: Apache-2.0
#include "train/parameter_constraints.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/check.hpp"
#include "io/checkpoint_file.hpp"
#include "train/checkpoint.hpp"

namespace sb::train {

ParameterConstraints::ParameterConstraints(const plan::TrainConfig& c, TrainingTask& task, bool load_start)
    : task_(task) {
  SB_USER_CHECK(c.strategy.tp == 1 && c.strategy.pp == 1,
                "{}: finetune and prune run on data-parallel ranks only so far (tp {} and pp {} given)", c.source,
                c.strategy.tp, c.strategy.pp);
  SavedWeights saved = read_saved_weights(c.finetune.from, task.model_name(), "finetune.from", c.source);
  const std::span<float> parameters = task.parameters_flat();
  // a checkpoint of the bare model (a language model) for a task that appends a head: the
  // backbone is loaded, the head keeps its initialisation
  const auto backbone = parameters.size() - static_cast<std::size_t>(task.appended_head_parameters());
  const bool without_head = saved.parameters.size() == backbone && backbone < parameters.size();
  SB_USER_CHECK(saved.parameters.size() == parameters.size() || without_head,
                "{}: finetune.from {} holds {} parameters, this {} has {}{}", c.source, c.finetune.from,
                saved.parameters.size(), task.model_name(), parameters.size(),
                backbone < parameters.size() ? fmt::format(" ({} without its classification head)", backbone) : "");
  if (without_head)  // the head's starting values are this run's own
    saved.parameters.insert(saved.parameters.end(), parameters.begin() + static_cast<std::ptrdiff_t>(backbone),
                            parameters.end());
  const std::span<float> statistics = task.untrained_state_flat();
  SB_USER_CHECK(saved.untrained_state.size() == statistics.size(),
                "{}: finetune.from {} holds {} BatchNorm statistics, this {} has {}", c.source, c.finetune.from,
                saved.untrained_state.size(), task.model_name(), statistics.size());
  start_ = std::move(saved.parameters);
  if (load_start) {
    std::copy(start_.begin(), start_.end(), parameters.begin());
    std::copy(saved.untrained_state.begin(), saved.untrained_state.end(), statistics.begin());
    task.parameters_updated();
  }
  state_.assign(parameters.size(), 0);

  const auto offset_of = [&](const float* p) {
    SB_CHECK(p >= parameters.data() && p < parameters.data() + parameters.size(), "tensor outside the parameters");
    return static_cast<std::size_t>(p - parameters.data());
  };
  if (c.finetune.freeze == "backbone") {
    bool head = false;
    for (const optim::ParameterSlice& slice : task.parameter_slices()) {
      if (task.is_head_parameter(slice.name)) {
        head = true;
        continue;
      }
      std::fill_n(state_.begin() + static_cast<std::ptrdiff_t>(offset_of(slice.param)), slice.numel, 2);
      frozen_ += slice.numel;
    }
    SB_USER_CHECK(head, "{}: finetune.freeze backbone needs a separate head, which {} has not", c.source,
                  task.model_name());
  }
  if (!c.prune.pattern.empty()) {
    // the masks rank the starting weights, wherever the run itself starts from
    std::vector<compress::WeightMatrix> matrices = task.weight_matrices();
    SB_USER_CHECK(!matrices.empty(), "{}: {} lists no weight matrices to prune", c.source, task.model_name());
    for (compress::WeightMatrix& m : matrices) m.values = start_.data() + offset_of(m.values);
    const auto keep =
        compress::magnitude_masks(matrices, compress::pruning_pattern_from_string(c.prune.pattern), c.prune.sparsity);
    for (std::size_t k = 0; k < matrices.size(); ++k) {
      const std::size_t first = static_cast<std::size_t>(matrices[k].values - start_.data());
      for (std::size_t i = 0; i < keep[k].size(); ++i) {
        if (keep[k][i] || state_[first + i] == 2) continue;  // a frozen weight stays as it was
        state_[first + i] = 1;
        ++pruned_;
      }
    }
    if (load_start) {
      constrain_parameters(parameters);
      task.parameters_updated();
    }
  }
}

void ParameterConstraints::constrain_gradients(std::span<float> gradients) const {
  SB_CHECK(gradients.size() == state_.size(), "{} gradients for {} parameters", gradients.size(), state_.size());
  for (std::size_t i = 0; i < state_.size(); ++i)
    if (state_[i] != 0) gradients[i] = 0.0f;
}

void ParameterConstraints::constrain_parameters(std::span<float> parameters) const {
  SB_CHECK(parameters.size() == state_.size(), "{} parameters for {}", parameters.size(), state_.size());
  constrain_parameters(parameters, 0);
}

void ParameterConstraints::constrain_parameters(std::span<float> shard, std::int64_t begin) const {
  SB_CHECK(begin >= 0 && begin + static_cast<std::int64_t>(shard.size()) <= static_cast<std::int64_t>(state_.size()),
           "parameters [{}, {}) outside the {} constrained", begin, begin + static_cast<std::int64_t>(shard.size()),
           state_.size());
  for (std::size_t i = 0; i < shard.size(); ++i) {
    const auto flat = static_cast<std::size_t>(begin) + i;
    if (state_[flat] == 1) shard[i] = 0.0f;
    if (state_[flat] == 2) shard[i] = start_[flat];
  }
}

compress::Sparsity ParameterConstraints::sparsity() const {
  const std::vector<compress::WeightMatrix> matrices = task_.weight_matrices();
  return compress::sparsity_of(matrices);
}

}  // namespace sb::train
