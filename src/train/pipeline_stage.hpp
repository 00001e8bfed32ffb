// SPDX-License-Identifier: Apache-2.0
// What a model stage offers the pipeline executor: forward and backward of one micro-batch in
// one of its activation slots, with the activation and gradient that cross to the neighbouring
// stages as byte buffers in the stage's storage type (fp32, or bf16/fp16 under mixed precision:
// a 16-bit pipeline sends half the bytes), in host memory whatever device the stage computes
// on (a GPU stage copies them). Leaves out the schedule (pipeline_schedule.hpp),
// messages (pipeline_executor.hpp), the optimizer and where the micro-batch data come from (the
// stage reads its own: the first stage its inputs, the last its targets).
#pragma once

#include <cstdint>

namespace sb::train {

class PipelineStage {
 public:
  virtual ~PipelineStage() = default;

  // Independent activation sets the stage holds: the most micro-batches it can have between
  // forward and backward at once (the executor needs pipeline_peak_in_flight of them).
  virtual std::int64_t activation_slots() const = 0;
  // Tracked bytes of one activation set: what each micro-batch in flight costs.
  virtual std::int64_t slot_activation_bytes() const = 0;
  // Bytes per micro-batch of the activation received from the previous stage (0 on the first
  // stage) and of the one sent to the next stage (0 on the last); the gradients that travel
  // back have the same sizes. Neighbouring stages agree (the executor checks).
  virtual std::int64_t input_bytes() const = 0;
  virtual std::int64_t output_bytes() const = 0;

  // Forward of micro-batch `micro` into `slot`; input (input_bytes): the previous stage's
  // output, nullptr on the first stage. Returns the micro-batch's mean loss on the last stage,
  // NaN on the others. The slot keeps what its backward needs.
  virtual double forward(std::int64_t slot, std::int64_t micro, const void* input) = 0;
  // (output_bytes) the slot's output activation: valid, unchanged, until the slot's next
  // forward, so it can be sent without a copy.
  virtual const void* output(std::int64_t slot) const = 0;
  // Backward of micro-batch `micro`, held in `slot`: accumulates the parameter gradients.
  // doutput (output_bytes): the gradient of output(slot) from the next stage, nullptr on the
  // last stage (which starts from its loss).
  virtual void backward(std::int64_t slot, std::int64_t micro, const void* doutput) = 0;
  // (input_bytes) the gradient of the last backward's input, for the previous stage; valid
  // until the next backward. Not called on the first stage.
  virtual const void* input_gradient() const = 0;
};

}  // namespace sb::train
