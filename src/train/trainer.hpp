// One training case on this process: the GPT reference on a text corpus, measured step by
// step and written to a scalebench result file. Leaves out multi-rank strategies (the
// parallel trainers build on the same loop) and the cost-model prediction.
#pragma once

#include <filesystem>
#include <string>

#include "train/config.hpp"

namespace sb::train {

struct TrainOutcome {
  double final_train_loss = 0, final_heldout_loss = 0, final_heldout_accuracy = 0;
  double step_time_median_s = 0, tokens_per_s = 0;
};

// Checks everything that can be checked before any work (model, data, strategy, device),
// then trains and writes run `run_id` into `out` (a new file; or appended to an existing
// scalebench file when `append` is true). A failure after the file exists marks the run
// `failed` with the reason and rethrows.
TrainOutcome run_training(const TrainConfig& config, const std::filesystem::path& out,
                          const std::string& run_id, bool append);

}  // namespace sb::train
