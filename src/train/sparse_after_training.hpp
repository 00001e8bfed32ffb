// SPDX-License-Identifier: Apache-2.0
// prune: the pruned model stored sparse at the end of a run: rank 0 stores its trained
// parameters (each weight matrix in its smallest layout, compress/sparse_storage.hpp), and
// where the task runs sparse inference (resnet, fp32, host) evaluates and times it against the
// dense model; the figures go to /runs/<id>/compression and the progress line, the stored
// bytes to summary.weight_bytes. Leaves out the storage and the inference themselves
// (compress/) and the mask (train/parameter_constraints.hpp).
#pragma once

#include <cstdint>
#include <optional>

#include "compress/sparse_inference.hpp"
#include "compress/sparse_storage.hpp"
#include "io/results_file.hpp"
#include "plan/config.hpp"
#include "train/progress.hpp"
#include "train/run_record.hpp"
#include "train/training_task.hpp"

namespace sb::train {

// The task's parameters and untrained state (BatchNorm running statistics, one dense tensor
// "untrained_state") as stored, read to the host wherever they live.
compress::StoredWeights stored_parameters(TrainingTask& task);

// The compression group's attributes of a pruned run; `inference` when it ran.
io::Attributes sparse_compression_attributes(const plan::TrainConfig& config, const compress::StoredWeights& stored,
                                             const std::optional<compress::SparseInferenceReport>& inference);

// On rank 0 of a pruned run: the stored bytes, recorded with the figures above; otherwise none
// (the other ranks wait in the next collective).
std::optional<std::int64_t> store_pruned_if_asked(const plan::TrainConfig& config, TrainingTask& task,
                                                  RunRecord& record, ProgressLine& progress);

}  // namespace sb::train
