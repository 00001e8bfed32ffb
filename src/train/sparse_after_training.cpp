// SPDX-License-Identifier: Apache-2.0
// The pruned model stored sparse at the end of a run (see sparse_after_training.hpp).
#include "train/sparse_after_training.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/check.hpp"
#include "train/device_staging.hpp"

namespace sb::train {

compress::StoredWeights stored_parameters(TrainingTask& task) {
  const std::span<float> live = task.parameters_flat();
  const std::vector<float> host = copy_to_host(std::span<const float>(live), task.device());
  const auto on_host = [&](const float* p) {
    SB_CHECK(p >= live.data() && p < live.data() + live.size(), "a tensor outside the parameters");
    return host.data() + (p - live.data());
  };
  std::vector<compress::NamedTensor> tensors;
  for (const optim::ParameterSlice& s : task.parameter_slices()) tensors.push_back({s.name, on_host(s.param), s.numel});
  // BatchNorm running statistics are not trained but inference needs them: stored dense beside
  // the parameters, as an unpruned run's tracked parameter bytes count them
  const std::span<float> state = task.untrained_state_flat();
  const std::vector<float> host_state = copy_to_host(std::span<const float>(state), task.device());
  if (!host_state.empty())
    tensors.push_back({"untrained_state", host_state.data(), static_cast<std::int64_t>(host_state.size())});
  std::vector<compress::WeightMatrix> matrices = task.weight_matrices();
  for (compress::WeightMatrix& m : matrices) m.values = on_host(m.values);
  return compress::store_weights(tensors, matrices);
}

io::Attributes sparse_compression_attributes(const plan::TrainConfig& c, const compress::StoredWeights& stored,
                                             const std::optional<compress::SparseInferenceReport>& inference) {
  io::Attributes attrs{{"prune", c.prune.pattern},
                       {"weight_bytes_dense", stored.dense_bytes()},
                       {"weight_bytes_sparse", stored.bytes()},
                       {"weight_bytes_sparse_ratio",
                        static_cast<double>(stored.dense_bytes()) / static_cast<double>(stored.bytes())},
                       {"sparse_layouts", stored.layout_counts()}};
  if (inference) {
    const compress::SparseInferenceReport& r = *inference;
    attrs.emplace_back("sparse_nonzeros", r.nonzeros);
    attrs.emplace_back("accuracy_dense", r.accuracy_dense);
    attrs.emplace_back("accuracy_sparse", r.accuracy_sparse);
    attrs.emplace_back("samples_per_s_dense", r.samples_per_s_dense);
    attrs.emplace_back("samples_per_s_sparse", r.samples_per_s_sparse);
    attrs.emplace_back("sparse_timing_rounds", r.timing_rounds);
    attrs.emplace_back("sparse_timing_images", r.timing_images);
  }
  return attrs;
}

std::optional<std::int64_t> store_pruned_if_asked(const plan::TrainConfig& c, TrainingTask& task, RunRecord& record,
                                                  ProgressLine& progress) {
  if (c.prune.pattern.empty() || !record.root()) return std::nullopt;
  const compress::StoredWeights stored = stored_parameters(task);
  const std::optional<compress::SparseInferenceReport> inference = task.sparse_inference(stored);
  record.writer().write_compression(sparse_compression_attributes(c, stored, inference));
  std::string line = fmt::format("pruned ({}): weights stored in {} bytes (dense {}: {:.2f}× smaller; {})",
                                 c.prune.pattern, stored.bytes(), stored.dense_bytes(),
                                 static_cast<double>(stored.dense_bytes()) / static_cast<double>(stored.bytes()),
                                 stored.layout_counts());
  if (inference)
    line += fmt::format(", sparse inference {:.0f} samples/s (dense {:.0f}), test accuracy {:.4f} (dense {:.4f})",
                        inference->samples_per_s_sparse, inference->samples_per_s_dense, inference->accuracy_sparse,
                        inference->accuracy_dense);
  progress.message(line);
  return stored.bytes();
}

}  // namespace sb::train
