// Choosing the task of a config: GPT names and inline descriptions train on text (a language
// model, or a spam classifier on spam-assassin), ResNet names on images.
#include "train/training_task.hpp"

#include "core/check.hpp"

namespace sb::train {

std::int64_t local_batch_of(const TrainConfig& c) {
  SB_USER_CHECK(c.global_batch % c.strategy.dp == 0,
                "{}: batch.global ({}) must be a multiple of strategy.dp ({}): each rank trains an equal share",
                c.source, c.global_batch, c.strategy.dp);
  return c.global_batch / c.strategy.dp;
}

std::int64_t micro_batch_of(const TrainConfig& c) {
  const std::int64_t local = local_batch_of(c);
  const std::int64_t m = c.strategy.micro_batches;
  if (m > 0) {
    SB_USER_CHECK(local % m == 0,
                  "{}: the batch per rank (batch.global {} / strategy.dp {} = {}) must be a multiple of "
                  "strategy.micro_batches ({})",
                  c.source, c.global_batch, c.strategy.dp, local, m);
    SB_USER_CHECK(c.micro_batch == 0 || c.micro_batch * m == local,
                  "{}: batch.micro {} × strategy.micro_batches {} must equal the batch per rank (batch.global {} / "
                  "strategy.dp {} = {}); give one of the two",
                  c.source, c.micro_batch, m, c.global_batch, c.strategy.dp, local);
    return local / m;
  }
  const std::int64_t micro = c.micro_batch > 0 ? c.micro_batch : local;
  SB_USER_CHECK(local % micro == 0,
                "{}: the batch per rank (batch.global {} / strategy.dp {} = {}) must be a multiple of batch.micro ({})",
                c.source, c.global_batch, c.strategy.dp, local, micro);
  return micro;
}

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

bool trains_resnet(const TrainConfig& c) { return c.model.name.rfind("resnet", 0) == 0 && c.model.layers == 0; }

gpt::GptConfig gpt_config_of(const TrainConfig& c) {
  if (c.model.layers == 0) return gpt::gpt_config_by_name(c.model.name);
  gpt::GptConfig g;
  g.name = c.model.name;
  g.layers = c.model.layers;
  g.channels = c.model.hidden;
  g.heads = c.model.heads;
  g.max_seq_len = c.model.seq_len;
  g.vocab = c.model.vocab;
  return g;
}

std::unique_ptr<TrainingTask> make_training_task(const TrainConfig& config, kernels::Backend backend,
                                                 MemoryTracker& tracker, parallel::ProcessGrid& grid) {
  if (trains_resnet(config))
    return make_image_classification_task(config, backend, tracker, grid);
  if (config.data.dataset == "spam-assassin") return make_sequence_classification_task(config, backend, tracker, grid);
  return make_language_model_task(config, backend, tracker, grid);
}

}  // namespace sb::train
