// Choosing the task of a config: GPT names and inline descriptions train on text, ResNet
// names on images.
#include "train/training_task.hpp"

#include "core/check.hpp"

namespace sb::train {

std::int64_t micro_batch_of(const TrainConfig& c) {
  const std::int64_t micro = c.micro_batch > 0 ? c.micro_batch : c.global_batch;
  SB_USER_CHECK(c.global_batch % micro == 0, "{}: batch.global ({}) must be a multiple of batch.micro ({})",
                c.source, c.global_batch, micro);
  return micro;
}

void average_accumulated_gradients(const kernels::KernelTable& kernels, std::span<float> gradients,
                                   std::int64_t accumulation) {
  if (accumulation > 1)
    kernels.scale_inplace(gradients.data(), static_cast<std::int64_t>(gradients.size()),
                          1.0 / static_cast<double>(accumulation));
}

std::unique_ptr<TrainingTask> make_training_task(const TrainConfig& config, kernels::Backend backend,
                                                 MemoryTracker& tracker) {
  if (config.model.name.rfind("resnet", 0) == 0 && config.model.layers == 0)
    return make_image_classification_task(config, backend, tracker);
  return make_language_model_task(config, backend, tracker);
}

}  // namespace sb::train
