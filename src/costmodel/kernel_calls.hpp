// The kernel calls one micro-batch makes in one pipeline unit of a model the trainer runs
// (GPT: embedding, block, head; ResNet with basic blocks: stem, block, head), forward and
// backward, in the trainer's order with the trainer's shape arguments (models/gpt/gpt.cpp,
// models/resnet/resnet.cpp). A calibrated site times each call from its kernel table
// (kernel_profile.hpp); `calibrate` times the same calls through the trainer's kernels. Leaves
// out copies of a few hundred bytes (tokens, labels, loss slots) and BatchNorm's per-channel
// statistics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "models/gpt/gpt_config.hpp"
#include "models/resnet/resnet_config.hpp"

namespace sb::costmodel {

struct KernelCall {
  // the StorageKernels name ("matmul_forward"), "conv2d_backward_weight" (conv2d_backward
  // without an input gradient), or "fill" (a memset)
  std::string kernel;
  std::vector<std::int64_t> shape;  // its shape arguments in signature order (fill: bytes)
  // What the call's time grows with, for interpolating between calibrated calls of one kernel:
  // FLOPs for matmul, conv2d and attention (a backward twice its forward's, as the trainer
  // counts them), elements touched for the rest.
  double size = 0;
  bool operator==(const KernelCall&) const = default;
};

struct KernelCalls {
  std::vector<KernelCall> forward, backward;
};

// One GPT unit: "embedding", a block, or "head", of a tp rank holding 1/tp of the heads, MLP
// columns and vocabulary; b sequences of t tokens.
enum class GptUnitKind { embedding, block, head };
KernelCalls gpt_unit_kernel_calls(const gpt::GptConfig& config, GptUnitKind unit, std::int64_t tp,
                                  std::int64_t b, std::int64_t t, int element_bytes);

// Unit u of resnet_pipeline_units (stem, the blocks, head) for n images; `first_in_stage`: the
// stage's first unit (the stem reads images; a later unit's input gradient is the stage's).
// UserError for a configuration the trainer does not run (bottleneck blocks, a stem max pool).
KernelCalls resnet_unit_kernel_calls(const resnet::ResnetConfig& config, std::size_t unit, std::int64_t n,
                                     int element_bytes);

// A step's per-parameter calls: zero the fp32 gradients of `parameters` ("fill"), clip and step
// the `owned` ones ("adamw_step" or "sgd_step": the optim classes' clip_and_step), and in
// 16-bit storage narrow the updated fp32 weights ("narrow").
std::vector<KernelCall> optimizer_kernel_calls(const std::string& optimizer, std::int64_t parameters,
                                               std::int64_t owned, int element_bytes);

// Whether the trainer runs this ResNet (basic blocks, no stem max pool), so its calls are known.
bool resnet_kernel_calls_known(const resnet::ResnetConfig& config);

}  // namespace sb::costmodel
