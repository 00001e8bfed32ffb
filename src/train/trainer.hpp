// SPDX-License-Identifier: Apache-2.0
// One training case in the current MPI world (one rank, or any dp × tp × pp grid), measured
// step by step and written by rank 0 to a scalebench result file, beside the cost model's
// prediction when the caller made one. Leaves out making the prediction (src/costmodel).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "plan/config.hpp"
#include "plan/run_prediction.hpp"

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
// Checkpoints (train/checkpoint.hpp): resumes from checkpoint_path_of(config, out, run_id) when it
// holds an unfinished run of this case (attribute resumed_from_step), writes one every
// checkpoint.every steps, and after SIGUSR1 (alone also SIGTERM/SIGINT) writes one at the step
// boundary, marks the run `interrupted` and throws TrainingInterrupted on every rank.
// prediction (may be null): written to the run's `prediction` group before the first step; after
// the last, the errors of its step time and tracked memory against the measurement join it, and
// summary.mfu is measured against its peak.
// Threads (train/thread_allocation.hpp): a run whose ranks' threads outnumber the CPUs they
// may use says so in its context (oversubscribed 1) and, unless run_id_chosen (the caller
// named it: `--run-id`, as run and submit do), in its id ("-oversubscribed").
TrainOutcome run_training(const plan::TrainConfig& config, const std::filesystem::path& out,
                          const std::string& run_id, bool append, const std::filesystem::path& trace = {},
                          const plan::RunPrediction* prediction = nullptr, bool run_id_chosen = true);

// Why this trainer cannot run `config` (the one sentence `train` exits 2 with, before any
// file is written), or nothing when it can. What `predict` says beside a prediction: the cost
// model also predicts what only larger machines or other trainers run.
std::optional<std::string> trainer_refusal(const plan::TrainConfig& config);

}  // namespace sb::train
