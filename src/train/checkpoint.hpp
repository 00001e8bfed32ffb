// SPDX-License-Identifier: Apache-2.0
// Checkpoint and resume for the trainer: what a checkpoint holds (every rank's fp32 parameters,
// optimizer state over its flat range or ZeRO-1 shard, BatchNorm running statistics, the loss
// scaler, the step and with it the data position and RNG counters), when it is written
// (every checkpoint.every steps, and at the step boundary after SIGUSR1), and how a run
// resumes from one, re-sharding ZeRO-1 state when the data-parallel size changed. Leaves out
// the HDF5 layout (io/checkpoint_file.hpp) and the step loop (trainer.cpp).
//
// Data order and initialisation draw from counter-based streams keyed by (seed, global step),
// so the step number is the whole RNG and data-loader state: a resumed run draws the batches
// the uninterrupted run would have drawn.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "parallel/communicator.hpp"
#include "parallel/process_grid.hpp"
#include "plan/config.hpp"
#include "train/distributed_step.hpp"
#include "train/training_task.hpp"

namespace sb::train {

// The exit status of `scalebench train` after a termination signal stopped it at a step
// boundary with its checkpoint written (EX_TEMPFAIL): job scripts requeue on it.
constexpr int kRequeueExitStatus = 75;

// Thrown on every rank once the checkpoint of an interrupted run is on disk.
class TrainingInterrupted : public sb::Error {
 public:
  using sb::Error::Error;
};

// checkpoint.path, or <out without .h5>.<run_id>.ckpt.h5 beside the result file (one per run,
// also when several runs share one result file).
std::filesystem::path checkpoint_path_of(const plan::TrainConfig& config, const std::filesystem::path& out,
                                         const std::string& run_id);
// Where a run writes its checkpoint without checkpoint.path: <out without .h5>.<run_id>.ckpt.h5.
std::filesystem::path default_checkpoint_path(const std::filesystem::path& out, const std::string& run_id);

// A config key naming another run's checkpoint (finetune.from, distill.teacher) as a file:
// "run:<id>" is the checkpoint run <id> wrote beside the result file `out` (its default path);
// anything else is the path itself.
std::filesystem::path checkpoint_source(const std::string& value, const std::filesystem::path& out);

// The fp32 parameters and untrained state (BatchNorm statistics) world rank 0 saved in a
// checkpoint of a data-parallel run of `model`. UserError naming `key` of `source` and the file
// when it is missing, of another model or of a tensor- or pipeline-parallel run.
struct SavedWeights {
  std::vector<float> parameters, untrained_state;
};
SavedWeights read_saved_weights(const std::filesystem::path& path, const std::string& model, const std::string& key,
                                const std::string& source);

class Checkpointer {
 public:
  // Every reference must outlive the checkpointer.
  Checkpointer(const plan::TrainConfig& config, std::filesystem::path path, parallel::Communicator& world,
               parallel::ProcessGrid& grid, TrainingTask& task, DistributedStep& step);

  // Collective. Restores the state of `train --resume F`, or (checkpoint.resume auto) of the
  // checkpoint at path() when it holds fewer than `total_steps` steps; returns the number of
  // steps it holds, 0 when the run starts afresh. UserError, on every rank, for a checkpoint of
  // another model, data set, precision, optimizer, seed, batch or tp/pp layout.
  std::int64_t resume(std::int64_t total_steps);

  // Whether checkpoint.every asks for a checkpoint after `steps_done` steps.
  bool due(std::int64_t steps_done) const;

  // Collective (one small all-reduce when the world has more than one rank). True on every
  // rank when some rank received SIGUSR1; alone, also for SIGTERM or SIGINT (with other ranks
  // those end the job at once: mpirun sends SIGTERM when a rank died).
  bool stop_requested();

  // Collective: every rank's state gathered on world rank 0, which writes path() atomically.
  void save(std::int64_t steps_done);

  // Collective, after the last step: when this run resumed from or wrote a checkpoint, brings
  // it to the finished step (unless due() just did), so running the same command again starts
  // afresh instead of resuming an old step.
  void finish(std::int64_t steps_done);

  const std::filesystem::path& path() const { return path_; }

 private:
  void check_flat_range() const;  // the optimizer state lies over the flat parameters, in order
  const plan::TrainConfig& config_;
  std::filesystem::path path_;
  parallel::Communicator& world_;
  parallel::ProcessGrid& grid_;
  TrainingTask& task_;
  DistributedStep& step_;
  bool used_ = false;  // resumed from, or wrote, path() in this run
};

}  // namespace sb::train
