// SPDX-License-Identifier: Apache-2.0
// The kernel calls one micro-batch makes on one rank of a pipeline stage, forward and backward,
// recorded from the models' own code (models/gpt/gpt.cpp, models/resnet/resnet.cpp run with a
// record-only kernels::KernelRecorder: no memory held, no kernel run), so the cost model and
// calibrate never describe a model's calls a second time. A calibrated site times each call from
// its kernel table (kernel_profile.hpp); `calibrate` times the same calls as the models make them.
// Leaves out copies (tokens, labels, a stage's input and output gradient) and the 16-bit
// conversions at a model's edges (kernel_recorder.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/recompute.hpp"
#include "kernels/kernel_recorder.hpp"
#include "models/gpt/gpt_config.hpp"
#include "models/resnet/resnet_config.hpp"

namespace sb::costmodel {

using kernels::KernelCall;

struct KernelCalls {
  std::vector<KernelCall> forward, backward;
  // The stage's parameter tensors as its optimizer steps them, one call each (the model's
  // parameter_slices: tp rank 0's shards, in storage order), elements each.
  std::vector<std::int64_t> parameter_tensors;
};

// tp rank 0 of t of a GPT pipeline stage holding `blocks` blocks, with the embedding when `first`
// and the head when `last`: b sequences of t tokens in `precision` ("fp32", "bf16", "fp16"). Each
// block's calls are recorded once and repeated: every block makes the same calls. Under
// recomputation the backward holds the recomputed forward calls where the model makes them;
// under sequence parallelism the LayerNorms and residuals run on 1/tp of the token rows.
KernelCalls gpt_stage_kernel_calls(const gpt::GptConfig& config, std::int64_t tp, std::int64_t blocks, bool first,
                                   bool last, std::int64_t b, std::int64_t t, const std::string& precision,
                                   Recompute recompute = Recompute::none, bool sequence_parallel = false);

// Units [unit_begin, unit_end) of resnet_pipeline_units (stem, the blocks, head) for n images;
// under recompute full the backward holds each block's recomputed forward calls.
// UserError for a configuration the trainer does not run (bottleneck blocks, a stem max pool).
KernelCalls resnet_stage_kernel_calls(const resnet::ResnetConfig& config, std::size_t unit_begin,
                                      std::size_t unit_end, std::int64_t n, const std::string& precision,
                                      Recompute recompute = Recompute::none);

// Whether the trainer runs this ResNet (basic blocks, no stem max pool), so its calls are known.
bool resnet_kernel_calls_known(const resnet::ResnetConfig& config);

// A step's per-parameter calls as the trainer's step makes them (train/trainer.cpp): the model's
// zero_grad over the fp32 gradients of `parameters` ("fill"), the optimizer's clip_and_step over
// the `owned_tensors` ("adamw_step" or "sgd_step" per tensor: each tensor's norm and update,
// timed together by calibrate at sizes from a bias to a large matrix; a model of many small
// tensors pays each call's fixed cost), and in 16-bit storage the model's
// sync_storage_parameters ("narrow").
std::vector<KernelCall> optimizer_kernel_calls(const std::string& optimizer, std::int64_t parameters,
                                               const std::vector<std::int64_t>& owned_tensors, int element_bytes);

// The runs of `tensors` (elements each, laid end to end in storage order) that rank `rank` of
// `ranks` steps under ZeRO: the trainer's shard [rank·s, rank·s + s), s = ceil(total / ranks),
// cut at the tensors' edges (train/data_parallel.cpp, ZeroSharding::shard_slices). One rank:
// the tensors themselves.
std::vector<std::int64_t> owned_tensor_runs(const std::vector<std::int64_t>& tensors, int ranks, int rank);

// Calls the cost model counts as free where a kernel table has no time for them: BatchNorm's
// per-channel statistics (a few hundred values; tables calibrated before the calls were
// recorded from the models did not time them).
bool negligible_kernel_call(const KernelCall& call);

}  // namespace sb::costmodel
