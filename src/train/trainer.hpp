// One training case in the current MPI world (one rank, or data parallel over every rank),
// measured step by step and written by rank 0 to a scalebench result file. Leaves out model
// parallelism (tp, pp) and the cost-model prediction.
#pragma once

#include <filesystem>
#include <string>

#include "train/config.hpp"

namespace sb::train {

struct TrainOutcome {
  double final_train_loss = 0, final_heldout_loss = 0, final_heldout_accuracy = 0;
  double step_time_median_s = 0, tokens_per_s = 0;
};

// Collective over MPI_COMM_WORLD, whose size must be the strategy's world size. Checks
// everything that can be checked before any work (model, data, strategy, device), then trains
// and writes run `run_id` into `out` on rank 0 (a new file; or appended to an existing
// scalebench file when `append` is true), and every rank's timeline into the Chrome trace
// `trace` when it is not empty. A failure after the file exists marks the run `failed` with
// the reason (`interrupted` after a termination signal) and rethrows.
TrainOutcome run_training(const TrainConfig& config, const std::filesystem::path& out,
                          const std::string& run_id, bool append, const std::filesystem::path& trace = {});

}  // namespace sb::train
