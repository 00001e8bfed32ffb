// SPDX-License-Identifier: Apache-2.0
// ResnetModelT<S> behind the PipelineStage interface.
#include "train/resnet_pipeline_stage.hpp"

#include "core/check.hpp"

namespace sb::train {

template <class S>
ResnetPipelineStageT<S>::ResnetPipelineStageT(resnet::ResnetModelT<S>& model, std::int64_t micro_batch)
    : model_(model), micro_(micro_batch) {
  SB_CHECK(micro_batch >= 1 && micro_batch <= model.max_batch(),
           "resnet pipeline stage: micro-batch of {} images for a model of at most {}", micro_batch,
           model.max_batch());
}

template <class S>
void ResnetPipelineStageT<S>::set_batch(const float* images, const std::int32_t* labels,
                                        std::function<void(std::int64_t micro, bool before)> around_backward) {
  images_ = images;
  labels_ = labels;
  around_backward_ = std::move(around_backward);
}

template <class S>
std::int64_t ResnetPipelineStageT<S>::input_bytes() const {
  return model_.has_stem() ? 0 : micro_ * model_.input_floats_per_image() * static_cast<std::int64_t>(sizeof(S));
}

template <class S>
std::int64_t ResnetPipelineStageT<S>::output_bytes() const {
  return model_.has_head() ? 0 : micro_ * model_.output_floats_per_image() * static_cast<std::int64_t>(sizeof(S));
}

template <class S>
double ResnetPipelineStageT<S>::forward(std::int64_t slot, std::int64_t micro, const void* input) {
  const std::int32_t* labels = nullptr;
  if (model_.has_head()) {
    SB_CHECK(labels_ != nullptr, "resnet pipeline stage: the last stage has no labels (set_batch)");
    labels = labels_ + micro * micro_;
  }
  if (!model_.has_stem()) return model_.forward_stage(slot, static_cast<const S*>(input), labels, micro_, true);
  SB_CHECK(images_ != nullptr, "resnet pipeline stage: the first stage has no images (set_batch)");
  return model_.forward(slot, images_ + micro * micro_ * model_.input_floats_per_image(), labels, micro_, true);
}

template <class S>
void ResnetPipelineStageT<S>::backward(std::int64_t slot, std::int64_t micro, const void* doutput) {
  // Backwards run in micro-batch order (pipeline_schedule.hpp): micro m−1 finishes every gradient.
  if (around_backward_) around_backward_(micro, true);
  model_.backward(slot, static_cast<const S*>(doutput));
  if (around_backward_) around_backward_(micro, false);
}

template class ResnetPipelineStageT<float>;
template class ResnetPipelineStageT<bf16>;
template class ResnetPipelineStageT<fp16>;

}  // namespace sb::train
