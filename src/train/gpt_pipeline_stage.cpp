// GptModelT<S> behind the PipelineStage interface.
#include "train/gpt_pipeline_stage.hpp"

#include "core/check.hpp"

namespace sb::train {

template <class S>
GptPipelineStageT<S>::GptPipelineStageT(gpt::GptModelT<S>& model, std::int64_t micro_batch, std::int64_t seq_len)
    : model_(model), B_(micro_batch), T_(seq_len) {
  SB_CHECK(micro_batch >= 1 && micro_batch <= model.max_batch() && seq_len >= 1 && seq_len <= model.max_seq_len(),
           "gpt pipeline stage: micro-batch ({}, {}) for a model of at most ({}, {})", micro_batch, seq_len,
           model.max_batch(), model.max_seq_len());
}

template <class S>
void GptPipelineStageT<S>::set_batch(const std::int32_t* tokens, const std::int32_t* targets,
                                     std::int64_t micro_batches, std::function<void(bool last)> around_last_backward) {
  tokens_ = tokens;
  targets_ = targets;
  micro_batches_ = micro_batches;
  around_last_backward_ = std::move(around_last_backward);
}

template <class S>
std::int64_t GptPipelineStageT<S>::input_bytes() const {
  return model_.shard().embedding ? 0 : B_ * T_ * model_.shard().C * static_cast<std::int64_t>(sizeof(S));
}

template <class S>
std::int64_t GptPipelineStageT<S>::output_bytes() const {
  return model_.shard().head ? 0 : B_ * T_ * model_.shard().C * static_cast<std::int64_t>(sizeof(S));
}

template <class S>
double GptPipelineStageT<S>::forward(std::int64_t slot, std::int64_t micro, const void* input) {
  const std::int64_t offset = micro * B_ * T_;
  const bool first = model_.shard().embedding, last = model_.shard().head;
  SB_CHECK(!first || tokens_, "gpt pipeline stage: the first stage has no tokens (set_batch)");
  SB_CHECK(!last || targets_, "gpt pipeline stage: the last stage has no targets (set_batch)");
  return model_.forward_stage(slot, first ? tokens_ + offset : nullptr, first ? nullptr : static_cast<const S*>(input),
                              last ? targets_ + offset : nullptr, B_, T_);
}

template <class S>
void GptPipelineStageT<S>::backward(std::int64_t slot, std::int64_t micro, const void* doutput) {
  // Backwards run in micro-batch order (pipeline_schedule.hpp): micro m−1 finishes every gradient.
  const bool last = micro + 1 == micro_batches_;
  if (last && around_last_backward_) around_last_backward_(true);
  model_.backward_stage(slot, static_cast<const S*>(doutput));
  if (last && around_last_backward_) around_last_backward_(false);
}

template class GptPipelineStageT<float>;
template class GptPipelineStageT<bf16>;
template class GptPipelineStageT<fp16>;

}  // namespace sb::train
