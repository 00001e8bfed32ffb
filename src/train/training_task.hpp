// What the training loop needs from a model and its data: one step's forward and backward,
// evaluation, and the figures the results record. Leaves out the optimizer, timing and
// result writing, which the loop (trainer.cpp) owns for every task alike.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "kernels/kernels.hpp"
#include "optim/parameter_slice.hpp"
#include "train/config.hpp"

namespace sb::train {

struct EvalResult {
  std::string split;  // train | heldout | test
  double loss = 0, accuracy = 0;
};

class TrainingTask {
 public:
  virtual ~TrainingTask() = default;
  virtual std::string model_name() const = 0;
  virtual std::string dataset_name() const = 0;
  virtual std::int64_t parameter_count() const = 0;
  virtual std::int64_t seq_len() const = 0;          // 0 when samples are not sequences
  virtual std::int64_t tokens_per_step() const = 0;  // 0 when samples are not sequences
  virtual std::int64_t steps_per_epoch() const = 0;
  virtual double flops_per_step() const = 0;
  // Zeroes the gradients, runs forward and backward over the micro-batches of global step
  // `step` and leaves the gradient of the mean loss of the whole global batch; returns it.
  virtual double forward_backward(std::int64_t step) = 0;
  virtual std::vector<EvalResult> evaluate() = 0;
  virtual std::vector<optim::ParameterSlice> parameter_slices() = 0;
};

// Builds the task a config names (GPT on text, ResNet on images), loading and checking its
// data; every user mistake is a UserError before anything is written.
std::unique_ptr<TrainingTask> make_training_task(const TrainConfig& config, kernels::Backend backend,
                                                 MemoryTracker& tracker);

std::unique_ptr<TrainingTask> make_language_model_task(const TrainConfig& config, kernels::Backend backend,
                                                       MemoryTracker& tracker);
std::unique_ptr<TrainingTask> make_image_classification_task(const TrainConfig& config,
                                                             kernels::Backend backend, MemoryTracker& tracker);

// After `accumulation` micro-batch backwards, each adding the gradient of its own mean loss:
// divides by `accumulation` to leave the gradient of the global batch's mean loss.
void average_accumulated_gradients(const kernels::KernelTable& kernels, std::span<float> gradients,
                                   std::int64_t accumulation);

// The micro-batch of a config (batch.micro, or the global batch), checked to divide it.
std::int64_t micro_batch_of(const TrainConfig& config);

}  // namespace sb::train
