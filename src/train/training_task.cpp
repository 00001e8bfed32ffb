// SPDX-License-Identifier: Apache-2.0
// Choosing the task of a config: GPT names and inline descriptions train on text (a language
// model, or a spam classifier on spam-assassin), ResNet names on images.
#include "train/training_task.hpp"

#include "core/check.hpp"

namespace sb::train {

void TrainingTask::set_loss_scale(double scale) {
  SB_CHECK(scale == 1.0, "{}: loss scale {} for a task without 16-bit storage", model_name(), scale);
}

std::vector<NamedValues> TrainingTask::gradient_values() {
  std::vector<NamedValues> values;
  for (const optim::ParameterSlice& slice : parameter_slices())
    values.push_back({slice.name, -1, {slice.grad, static_cast<std::size_t>(slice.numel)}});
  return values;
}

void TrainingTask::synchronise_batchnorm(std::function<void(std::span<double>)>) {
  throw UserError(fmt::format("strategy.batchnorm 'sync' needs a model with BatchNorm; {} has none", model_name()));
}

Residency gradient_residency(const plan::TrainConfig& config) {
  const bool staged = config.strategy.zero >= 2 || config.precision.sixteen_bit_main_gradients();
  return staged ? Residency::resident_pages : Residency::allocated;
}

Residency parameter_residency(const plan::TrainConfig& config) {
  return config.strategy.zero >= 3 ? Residency::resident_pages : Residency::allocated;
}

Residency master_residency(const plan::TrainConfig& config) {
  const bool mixed = config.precision.dtype != "fp32";
  return mixed && config.strategy.zero >= 1 && config.device == "cpu" ? Residency::resident_pages : Residency::allocated;
}

void TrainingTask::narrow_to_storage(std::span<const float>, std::byte*) {
  throw UserError(fmt::format("strategy.zero shards the fp32 master weights of 16-bit models; {} has none", model_name()));
}

void TrainingTask::set_unit_parameter_gather(UnitParameterGather*) {
  throw UserError(fmt::format("strategy.zero 3 gathers a model's parameters unit by unit; {} does not", model_name()));
}

bool reports_gradients(const GradientSync* sync, std::int64_t m, std::int64_t accumulation) {
  return sync && (m + 1 == accumulation || sync->reduces_every_micro_batch());
}

bool reduces_every_micro_batch(const GradientSync* sync) { return sync && sync->reduces_every_micro_batch(); }

void finish_gradients(GradientSync* sync, const kernels::KernelTable& kernels, std::span<float> gradients,
                      std::int64_t accumulation) {
  if (sync)
    sync->finish(1.0 / static_cast<double>(accumulation));
  else
    average_accumulated_gradients(kernels, gradients, accumulation);
}

void average_accumulated_gradients(const kernels::KernelTable& kernels, std::span<float> gradients,
                                   std::int64_t accumulation) {
  if (accumulation > 1)
    kernels.scale_inplace(gradients.data(), static_cast<std::int64_t>(gradients.size()),
                          1.0 / static_cast<double>(accumulation));
}

std::unique_ptr<TrainingTask> make_training_task(const plan::TrainConfig& config, const plan::RunPlan& run_plan,
                                                 kernels::Backend backend, MemoryTracker& tracker,
                                                 parallel::ProcessGrid& grid) {
  if (run_plan.resnet) return make_image_classification_task(config, run_plan, backend, tracker, grid);
  if (config.data.dataset == "spam-assassin")
    return make_sequence_classification_task(config, run_plan, backend, tracker, grid);
  return make_language_model_task(config, run_plan, backend, tracker, grid);
}

}  // namespace sb::train
