// SPDX-License-Identifier: Apache-2.0
// Rank 0's record of a training run (see run_record.hpp).
#include "train/run_record.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdio>

#include "metrics/run_context.hpp"
#include "parallel/fault.hpp"
#include "runtime/device_runtime.hpp"
#include "train/checkpoint.hpp"
#include "sb_git_revision.hpp"  // SB_GIT_SHA, SB_GIT_DESCRIBE: the commit that built this

namespace sb::train {

io::Attributes run_attributes(const plan::TrainConfig& c, const plan::RunPlan& run_plan, const TrainingTask& task,
                              std::int64_t first_step) {
  return {{"config_yaml", c.yaml}, {"model", task.model_name()}, {"dataset", task.dataset_name()},
          {"device", c.device}, {"precision", c.precision.dtype}, {"dp", c.strategy.dp},
          {"tp", c.strategy.tp}, {"pp", c.strategy.pp}, {"micro_batches", run_plan.micro_batches},
          {"micro_batch", run_plan.micro_batch}, {"stages", run_plan.stages}, {"stage_rule", run_plan.stage_rule},
          {"schedule", c.strategy.schedule}, {"zero", c.strategy.zero},
          {"interleave", run_plan.interleave}, {"recompute", c.strategy.recompute},
          {"sequence_parallel", static_cast<std::int64_t>(c.strategy.sequence_parallel)},
          {"main_grads", c.precision.main_grads},
          {"world_size", c.strategy.world_size()}, {"global_batch", c.global_batch}, {"seq_len", task.seq_len()},
          {"started_utc", metrics::utc_now_iso8601()}, {"git_sha", std::string(SB_GIT_SHA)},
          {"resumed_from_step", first_step}};
}

// The host clock times every step; on cuda the step waits for the GPU (cudaDeviceSynchronize)
// before each of its timestamps, so the time is the GPU's work too.
io::Attributes run_context_on(Device device, io::Attributes context) {
  const auto set = [&context](const std::string& name, io::AttrValue value) {
    for (auto& [key, old] : context)
      if (key == name) return static_cast<void>(old = std::move(value));
    context.emplace_back(name, std::move(value));
  };
  if (device == Device::cuda) {
    const GpuDescription gpu = current_gpu_description();
    set("gpu_model", gpu.model);
    set("driver", gpu.driver);
    set("step_timing", std::string("host clock after cudaDeviceSynchronize"));
  } else {
    set("step_timing", std::string("host clock after Kokkos::fence"));
  }
  return context;
}

io::StepRow step_row(std::int64_t step, const StepResult& r, std::int64_t global_batch,
                     std::int64_t tokens_per_step, double flops_per_step) {
  return {.step = step, .loss = r.loss, .lr = r.lr, .grad_norm = r.grad_norm, .loss_scale = r.loss_scale,
          .step_time_s = r.step_s(), .compute_s = r.compute_s(), .comm_s = r.comm_s() + r.tp_comm_s + r.p2p_s,
          .bubble_s = r.bubble_s, .optimizer_s = r.optimizer_s(), .samples = global_batch,
          .tokens = tokens_per_step, .flops = flops_per_step};
}

RunRecord::RunRecord(bool root, const std::filesystem::path& out, bool append, const std::string& run_id,
                     const io::Attributes& attributes, const plan::RunPrediction* prediction) {
  if (!root) return;
  reserve_ = SpaceReserve(out, SpaceReserve::kResultFileBytes);
  file_.emplace(append ? io::ResultsFile::open_or_create(out) : io::ResultsFile::create(out));
  run_.emplace(file_->begin_run(run_id, attributes));
  if (prediction) run_->write_prediction(prediction->attributes);
}

void RunRecord::write_context(const io::Attributes& context) {
  if (run_) run_->write_context(context);
}

void RunRecord::append_step(const io::StepRow& row) {
  if (run_) run_->append_step(row);
}

void RunRecord::append_eval(const io::EvalRow& row) {
  if (run_) run_->append_eval(row);
}

void RunRecord::finish_ok() {
  if (run_) run_->finish("ok", "");
}

void RunRecord::finish_failed(const std::exception& error, int world_size) noexcept {
  if (!run_) return;
  try {
    const int signal = parallel::termination_signal();
    const bool checkpointed = dynamic_cast<const TrainingInterrupted*>(&error) != nullptr;
    const std::string status = signal == SIGUSR1 || checkpointed ? "interrupted" : "failed";
    const std::string reason =
        signal == SIGTERM && world_size > 1
            ? fmt::format("{} (mpirun or the scheduler ended the job: another rank died, or it was cancelled)",
                          error.what())
            : std::string(error.what());
    try {
      run_->finish(status, reason);
    } catch (const std::exception&) {
      if (!reserve_.release()) throw;
      // HDF5 writes again what it could not, into the reserve's space; a flush right after a
      // failed one may fail once more for HDF5's own state (io/h5_file_close.hpp)
      for (int attempt = 1;; ++attempt) {
        try {
          run_->finish(status, reason);
          break;
        } catch (const std::exception&) {
          if (attempt == 3) throw;
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "scalebench: the failure could not be recorded in %s: %s\n", file_->path().c_str(),
                 e.what());
  }
}

}  // namespace sb::train
