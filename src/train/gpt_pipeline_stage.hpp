// SPDX-License-Identifier: Apache-2.0
// A GptModelT<S> partition as a pipeline stage: micro-batch i of the step's batch is token and
// target rows [i·micro, (i+1)·micro), read by the stage that holds the embedding (tokens) and
// the one that holds the head (targets); forwards and backwards on the model's activation
// slots. The residual stream (B, T, C) crosses stages in the storage type S, as Megatron sends
// 16-bit activations and gradients under mixed precision. What crosses stages is host memory
// (the executor's messages go over MPI, whatever the device): on device cuda each slot's output
// and the input gradient are copied to host buffers after the model writes them, and the
// received input and d(output) into a device buffer before the model reads them; on the cpu the
// model's own memory is passed. Leaves out building the partition (gpt_partition.hpp), the
// messages (the executor) and the tied-embedding gradient exchange (the task).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/memory.hpp"
#include "models/gpt/gpt.hpp"
#include "train/pipeline_stage.hpp"

namespace sb::train {

template <class S>
class GptPipelineStageT final : public PipelineStage {
 public:
  // micro_batch (B) sequences of seq_len (T) tokens per micro-batch; model must outlive the stage.
  // On device cuda the message buffers are tracked as comm memory in tracker.
  GptPipelineStageT(gpt::GptModelT<S>& model, std::int64_t micro_batch, std::int64_t seq_len,
                    MemoryTracker& tracker);

  // The step's batch, (m·B, T) tokens and targets: the first stage reads the tokens, the last
  // the targets; a stage may pass nullptr for what it does not read. Unchanged while the step runs.
  // around_backward(micro, true/false): called just before and after the backward of each
  // micro-batch, in micro-batch order (m − 1 last, the one that finishes every gradient), e.g. to
  // install the data-parallel gradient-ready callback; may be empty.
  void set_batch(const std::int32_t* tokens, const std::int32_t* targets,
                 std::function<void(std::int64_t micro, bool before)> around_backward = {});

  std::int64_t activation_slots() const override { return model_.activation_slots(); }
  std::int64_t slot_activation_bytes() const override { return model_.slot_activation_bytes(); }
  std::int64_t input_bytes() const override;
  std::int64_t output_bytes() const override;
  double forward(std::int64_t slot, std::int64_t micro, const void* input) override;
  const void* output(std::int64_t slot) const override;
  void backward(std::int64_t slot, std::int64_t micro, const void* doutput) override;
  const void* input_gradient() const override;

  // An evaluation forward of (B, T) rows in slot 0, outside the schedule: tokens on the first
  // stage, input (host, input_bytes) from the previous one on the others, targets on the last
  // (may be nullptr). Returns the mean loss on the last stage; output(0) is then what to send on.
  double forward_rows(const std::int32_t* tokens, const void* input, const std::int32_t* targets);

 private:
  bool staged() const { return model_.device() != Device::cpu; }
  std::int64_t boundary_bytes() const;  // one message between stages, either way
  // A host message of `bytes` as the model reads it: itself on the cpu, else its device copy.
  const S* on_device(const void* message, std::int64_t bytes);

  gpt::GptModelT<S>& model_;
  std::int64_t B_, T_;
  // device cuda only: host copies of each slot's output and of the input gradient, and the
  // device buffer a received message is copied into
  std::vector<TrackedBuffer> host_outputs_;
  TrackedBuffer host_input_gradient_, device_message_;
  const std::int32_t* tokens_ = nullptr;
  const std::int32_t* targets_ = nullptr;
  std::function<void(std::int64_t, bool)> around_backward_;
};

using GptPipelineStage = GptPipelineStageT<float>;
extern template class GptPipelineStageT<float>;
extern template class GptPipelineStageT<bf16>;
extern template class GptPipelineStageT<fp16>;

}  // namespace sb::train
