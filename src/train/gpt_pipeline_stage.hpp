// A GptModelT<S> partition as a pipeline stage: micro-batch i of the step's batch is token and
// target rows [i·micro, (i+1)·micro), read by the stage that holds the embedding (tokens) and
// the one that holds the head (targets); forwards and backwards on the model's activation
// slots. The residual stream (B, T, C) crosses stages in the storage type S, as Megatron sends
// 16-bit activations and gradients under mixed precision. Leaves out building the partition
// (gpt_partition.hpp), the messages (the executor) and the tied-embedding gradient exchange
// (the task).
#pragma once

#include <cstdint>
#include <functional>

#include "models/gpt/gpt.hpp"
#include "train/pipeline_stage.hpp"

namespace sb::train {

template <class S>
class GptPipelineStageT final : public PipelineStage {
 public:
  // micro_batch (B) sequences of seq_len (T) tokens per micro-batch; model must outlive the stage.
  GptPipelineStageT(gpt::GptModelT<S>& model, std::int64_t micro_batch, std::int64_t seq_len);

  // The step's batch, (m·B, T) tokens and targets: the first stage reads the tokens, the last
  // the targets; a stage may pass nullptr for what it does not read. Unchanged while the step runs.
  // on_last_backward: called just before the step's last backward (the one that finishes every
  // gradient), e.g. to install the data-parallel gradient-ready callback; may be empty.
  void set_batch(const std::int32_t* tokens, const std::int32_t* targets, std::int64_t micro_batches,
                 std::function<void(bool last)> around_last_backward = {});

  std::int64_t activation_slots() const override { return model_.activation_slots(); }
  std::int64_t slot_activation_bytes() const override { return model_.slot_activation_bytes(); }
  std::int64_t input_bytes() const override;
  std::int64_t output_bytes() const override;
  double forward(std::int64_t slot, std::int64_t micro, const void* input) override;
  const void* output(std::int64_t slot) const override { return model_.stage_output(slot); }
  void backward(std::int64_t slot, std::int64_t micro, const void* doutput) override;
  const void* input_gradient() const override { return model_.stage_input_gradient(); }

 private:
  gpt::GptModelT<S>& model_;
  std::int64_t B_, T_;
  const std::int32_t* tokens_ = nullptr;
  const std::int32_t* targets_ = nullptr;
  std::int64_t micro_batches_ = 0;
  std::function<void(bool)> around_last_backward_;
};

using GptPipelineStage = GptPipelineStageT<float>;
extern template class GptPipelineStageT<float>;
extern template class GptPipelineStageT<bf16>;
extern template class GptPipelineStageT<fp16>;

}  // namespace sb::train
