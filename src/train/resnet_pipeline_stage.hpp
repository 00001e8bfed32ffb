// SPDX-License-Identifier: Apache-2.0
// A ResnetModelT<S> partition as a pipeline stage: micro-batch i of the step's batch is images
// and labels [i·micro, (i+1)·micro), read by the stage that holds the stem (images) and the
// one that holds the head (labels); training-mode forwards and backwards on the model's slots.
// Activations and their gradients cross stages in the storage type S (16-bit under mixed
// precision). Leaves out building the partition (resnet_partition.hpp) and the messages (the
// executor).
#pragma once

#include <cstdint>
#include <functional>

#include "models/resnet/resnet.hpp"
#include "train/pipeline_stage.hpp"

namespace sb::train {

template <class S>
class ResnetPipelineStageT final : public PipelineStage {
 public:
  // micro_batch: images per micro-batch, at most model.max_batch(). model must outlive the stage.
  ResnetPipelineStageT(resnet::ResnetModelT<S>& model, std::int64_t micro_batch);

  // The step's batch, (m·micro, C, H, W) images and (m·micro) labels: the first stage reads the
  // images, the last the labels; a stage may pass nullptr for what it does not read. The
  // buffers must stay unchanged while the step runs.
  // around_backward(micro, true/false): called just before and after the backward of each
  // micro-batch, in micro-batch order (m − 1 last, the one that finishes every gradient), e.g. to
  // install the data-parallel gradient-ready callback; may be empty.
  void set_batch(const float* images, const std::int32_t* labels,
                 std::function<void(std::int64_t micro, bool before)> around_backward = {});

  std::int64_t activation_slots() const override { return model_.activation_slots(); }
  std::int64_t slot_activation_bytes() const override { return model_.slot_activation_bytes(); }
  std::int64_t input_bytes() const override;
  std::int64_t output_bytes() const override;
  double forward(std::int64_t slot, std::int64_t micro, const void* input) override;
  const void* output(std::int64_t slot) const override { return model_.output(slot); }
  void backward(std::int64_t slot, std::int64_t micro, const void* doutput) override;
  const void* input_gradient() const override { return model_.input_gradient(); }

 private:
  resnet::ResnetModelT<S>& model_;
  std::int64_t micro_;
  const float* images_ = nullptr;
  const std::int32_t* labels_ = nullptr;
  std::function<void(std::int64_t, bool)> around_backward_;
};

using ResnetPipelineStage = ResnetPipelineStageT<float>;
extern template class ResnetPipelineStageT<float>;
extern template class ResnetPipelineStageT<bf16>;
extern template class ResnetPipelineStageT<fp16>;

}  // namespace sb::train
