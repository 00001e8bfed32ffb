// SPDX-License-Identifier: Apache-2.0
// Rank 0's record of a training run in its result file: the run's attributes and the prediction
// before the first step (status "interrupted" until finish), the context, a row per step and
// per evaluation, and the status a failure leaves. On every other rank a RunRecord holds nothing
// and its calls do nothing. Leaves out what the summary and the per-rank tables hold
// (train/run_summary.hpp, train/rank_tables.hpp) and the HDF5 layout (io/results_file.hpp).
#pragma once

#include <cstdint>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>

#include "core/space_reserve.hpp"
#include "io/results_file.hpp"
#include "kernels/kernels.hpp"
#include "plan/config.hpp"
#include "train/distributed_step.hpp"
#include "plan/run_plan.hpp"
#include "plan/run_prediction.hpp"
#include "train/training_task.hpp"

namespace sb::train {

// /runs/<id>'s attributes as the run starts: the case, the grid, the plan's micro-batches and
// stages, and resumed_from_step.
io::Attributes run_attributes(const plan::TrainConfig& config, const plan::RunPlan& run_plan, const TrainingTask& task,
                              std::int64_t first_step);

// The run's context with the device's part: the GPU and its driver (rank 0's), and how step
// times were taken.
io::Attributes run_context_on(Device device, io::Attributes context);

// One row of the steps table. comm_s is every exposed communication: data-parallel, tensor-parallel
// and pipeline transfers.
io::StepRow step_row(std::int64_t step, const StepResult& r, std::int64_t global_batch,
                     std::int64_t tokens_per_step, double flops_per_step);

class RunRecord {
 public:
  // On rank 0 (root): holds back SpaceReserve::kResultFileBytes beside `out` for the failure
  // record (StorageError when the disk has not that much), creates `out` (or, append, opens it
  // or creates it), begins run `run_id` with `attributes` and writes the prediction when there
  // is one.
  RunRecord(bool root, const std::filesystem::path& out, bool append, const std::string& run_id,
            const io::Attributes& attributes, const plan::RunPrediction* prediction);

  bool root() const { return run_.has_value(); }
  // Rank 0 only: the run's group, for what the other calls do not cover.
  io::RunWriter& writer() { return *run_; }

  void write_context(const io::Attributes& context);
  void append_step(const io::StepRow& row);
  void append_eval(const io::EvalRow& row);
  // Status ok: the run finished.
  void finish_ok();
  // The status a failure leaves: interrupted after SIGUSR1 (the scheduler's notice before
  // preemption) or a checkpointed stop; failed otherwise, SIGTERM with other ranks saying that
  // mpirun or the scheduler ended the job. When the disk is full, the reserve is released and
  // the status written into its space. Never throws: a failure that cannot be recorded is said
  // on stderr, and the caller goes on with the error it has.
  void finish_failed(const std::exception& error, int world_size) noexcept;

 private:
  SpaceReserve reserve_;  // released after the file is closed (declared first, destroyed last)
  std::optional<io::ResultsFile> file_;
  std::optional<io::RunWriter> run_;
};

}  // namespace sb::train
