// SPDX-License-Identifier: Apache-2.0
// GptModelT<S> behind the PipelineStage interface.
#include "train/gpt_pipeline_stage.hpp"

#include <algorithm>

#include "core/check.hpp"
#include "core/device_memory.hpp"
#include "runtime/device_runtime.hpp"

namespace sb::train {

template <class S>
GptPipelineStageT<S>::GptPipelineStageT(gpt::GptModelT<S>& model, std::int64_t micro_batch, std::int64_t seq_len,
                                        MemoryTracker& tracker)
    : model_(model), B_(micro_batch), T_(seq_len) {
  SB_CHECK(micro_batch >= 1 && micro_batch <= model.max_batch() && seq_len >= 1 && seq_len <= model.max_seq_len(),
           "gpt pipeline stage: micro-batch ({}, {}) for a model of at most ({}, {})", micro_batch, seq_len,
           model.max_batch(), model.max_seq_len());
  if (!staged()) return;
  if (output_bytes() > 0)
    for (std::int64_t s = 0; s < model.activation_slots(); ++s)
      host_outputs_.emplace_back(tracker, MemoryCategory::comm, output_bytes(), "pipeline output on the host");
  if (input_bytes() > 0)
    host_input_gradient_ = TrackedBuffer(tracker, MemoryCategory::comm, input_bytes(), "pipeline input gradient on the host");
  // the input (forward) and d(output) (backward): the model copies each out before it returns
  const std::int64_t message_bytes = std::max(input_bytes(), output_bytes());
  if (message_bytes > 0)
    device_message_ =
        TrackedBuffer(tracker, MemoryCategory::comm, message_bytes, "pipeline message on the device", model.device());
}

template <class S>
const S* GptPipelineStageT<S>::on_device(const void* message, std::int64_t bytes) {
  if (!staged() || message == nullptr) return static_cast<const S*>(message);
  SB_CHECK(bytes <= device_message_.bytes(), "gpt pipeline stage: a {}-byte message for a {}-byte buffer", bytes,
           device_message_.bytes());
  copy_device_bytes(device_message_.data(), model_.device(), message, Device::cpu, static_cast<std::size_t>(bytes));
  return device_message_.as<S>();
}

template <class S>
const void* GptPipelineStageT<S>::output(std::int64_t slot) const {
  if (!staged()) return model_.stage_output(slot);
  SB_CHECK(slot >= 0 && slot < static_cast<std::int64_t>(host_outputs_.size()), "gpt pipeline stage: output of slot {}",
           slot);
  return host_outputs_[static_cast<std::size_t>(slot)].data();
}

template <class S>
const void* GptPipelineStageT<S>::input_gradient() const {
  return staged() ? host_input_gradient_.data() : model_.stage_input_gradient();
}

template <class S>
void GptPipelineStageT<S>::set_batch(const std::int32_t* tokens, const std::int32_t* targets,
                                     std::function<void(std::int64_t micro, bool before)> around_backward) {
  tokens_ = tokens;
  targets_ = targets;
  around_backward_ = std::move(around_backward);
}

template <class S>
std::int64_t GptPipelineStageT<S>::input_bytes() const {
  return model_.shard().embedding ? 0 : boundary_bytes();
}

template <class S>
std::int64_t GptPipelineStageT<S>::output_bytes() const {
  return model_.shard().head ? 0 : boundary_bytes();
}

// The residual stream between stages: (B, T, C), or under sequence parallelism this tp rank's
// B·T/tp rows of it (Megatron-LM's scatter-gather of the boundary comes for free).
template <class S>
std::int64_t GptPipelineStageT<S>::boundary_bytes() const {
  const gpt::GptShard& s = model_.shard();
  return s.residual_rows(B_ * T_) * s.C * static_cast<std::int64_t>(sizeof(S));
}

template <class S>
double GptPipelineStageT<S>::forward(std::int64_t slot, std::int64_t micro, const void* input) {
  const std::int64_t offset = micro * B_ * T_;
  const bool first = model_.shard().embedding, last = model_.shard().head;
  SB_CHECK(!first || tokens_, "gpt pipeline stage: the first stage has no tokens (set_batch)");
  SB_CHECK(!last || targets_, "gpt pipeline stage: the last stage has no targets (set_batch)");
  const double loss = model_.forward_stage(slot, first ? tokens_ + offset : nullptr,
                                           first ? nullptr : on_device(input, input_bytes()),
                                           last ? targets_ + offset : nullptr, B_, T_);
  if (staged() && !last)  // the output waits on the host until this slot's next forward
    copy_device_bytes(host_outputs_[static_cast<std::size_t>(slot)].data(), Device::cpu, model_.stage_output(slot),
                      model_.device(), static_cast<std::size_t>(output_bytes()));
  synchronize_device(model_.device());  // the executor times the op: the GPU's work is in it
  return loss;
}

template <class S>
double GptPipelineStageT<S>::forward_rows(const std::int32_t* tokens, const void* input, const std::int32_t* targets) {
  const bool first = model_.shard().embedding, last = model_.shard().head;
  SB_CHECK(!first || tokens, "gpt pipeline stage: the first stage evaluates tokens");
  const double loss = model_.forward_stage(0, first ? tokens : nullptr, first ? nullptr : on_device(input, input_bytes()),
                                           last ? targets : nullptr, B_, T_);
  if (staged() && !last)
    copy_device_bytes(host_outputs_.front().data(), Device::cpu, model_.stage_output(0), model_.device(),
                      static_cast<std::size_t>(output_bytes()));
  return loss;
}

template <class S>
void GptPipelineStageT<S>::backward(std::int64_t slot, std::int64_t micro, const void* doutput) {
  // Backwards run in micro-batch order (pipeline_schedule.hpp): micro m−1 finishes every gradient.
  if (around_backward_) around_backward_(micro, true);
  model_.backward_stage(slot, on_device(doutput, output_bytes()));
  if (staged() && !model_.shard().embedding)
    copy_device_bytes(host_input_gradient_.data(), Device::cpu, model_.stage_input_gradient(), model_.device(),
                      static_cast<std::size_t>(input_bytes()));
  synchronize_device(model_.device());
  if (around_backward_) around_backward_(micro, false);
}

template class GptPipelineStageT<float>;
template class GptPipelineStageT<bf16>;
template class GptPipelineStageT<fp16>;

}  // namespace sb::train
