// SPDX-License-Identifier: Apache-2.0
// Recording a stage's calls: the model built around a record-only recorder (it allocates
// nothing), one training forward and backward of one micro-batch, the recorded units composed
// into the stage. Inputs are never read, so placeholders stand for them.
#include "costmodel/kernel_calls.hpp"

#include <algorithm>
#include <span>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "kernels/storage_kernels.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_partition.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_partition.hpp"
#include "parallel/zero_shard.hpp"

namespace sb::costmodel {

namespace {

using i64 = std::int64_t;
using kernels::KernelRecorder;
using kernels::RecordedUnit;

// The recorded units' calls in order, each "block" unit `block_repeats` times.
std::vector<KernelCall> composed(const std::vector<RecordedUnit>& units, i64 block_repeats) {
  std::vector<KernelCall> calls;
  for (const RecordedUnit& u : units)
    for (i64 r = 0; r < (u.unit == "block" ? block_repeats : 1); ++r)
      calls.insert(calls.end(), u.calls.begin(), u.calls.end());
  return calls;
}

// The optimizer's tensors of a stage of `blocks` blocks (GptModelT::parameter_slices: the
// shard's tensors that it holds, each block tensor covering every block).
std::vector<i64> gpt_parameter_tensors(const gpt::GptConfig& config, gpt::GptPartition partition, i64 blocks) {
  partition.layer_end = partition.layer_begin + blocks;
  std::vector<i64> tensors;
  for (const Shape& shape : gpt::gpt_shard_shapes(config, gpt::gpt_shard_shape(config, partition)))
    if (shape.numel() > 0) tensors.push_back(shape.numel());
  return tensors;
}

template <class S>
KernelCalls record_gpt_stage(const gpt::GptConfig& config, i64 tp, i64 blocks, bool first, bool last, i64 B, i64 T,
                             Recompute recompute, bool sequence_parallel) {
  KernelRecorder recorder(KernelRecorder::Mode::record_only);
  MemoryTracker tracker;
  gpt::GptPartition partition;
  partition.layer_begin = 0;
  partition.layer_end = 1;  // one block recorded, repeated
  partition.embedding = first;
  partition.head = last;
  partition.tp.size = static_cast<int>(tp);
  partition.recompute = recompute;
  partition.sequence_parallel = sequence_parallel;
  partition.tp.all_reduce_sum = partition.tp.all_reduce_max = [](std::span<float>) {};
  partition.tp.reduce_scatter_sum = [](std::span<const float>, std::span<float>) {};
  partition.tp.all_gather = [](std::span<const std::byte>, std::span<std::byte>) {};
  // a spec-only size (gpt-175b) is never trained, but a record-only model allocates nothing
  gpt::GptConfig recorded = config;
  recorded.spec_only = false;
  gpt::GptModelT<S> model(recorded, B, T, kernels::Backend::cpu, tracker, partition, 0, &recorder);
  const std::vector<std::int32_t> tokens(static_cast<std::size_t>(B * T), 0);
  const S placeholder{};  // a stage's input and output gradient: never read while recording
  model.forward_stage(0, first ? tokens.data() : nullptr, first ? nullptr : &placeholder,
                      last ? tokens.data() : nullptr, B, T);
  KernelCalls calls;
  calls.parameter_tensors = gpt_parameter_tensors(config, partition, blocks);
  calls.forward = composed(recorder.units(), blocks);
  recorder.clear();
  model.backward_stage(0, last ? nullptr : &placeholder);
  calls.backward = composed(recorder.units(), blocks);
  return calls;
}

template <class S>
KernelCalls record_resnet_stage(const resnet::ResnetConfig& config, std::size_t unit_begin, std::size_t unit_end,
                                i64 N, Recompute recompute) {
  KernelRecorder recorder(KernelRecorder::Mode::record_only);
  MemoryTracker tracker;
  const std::size_t units = resnet::resnet_pipeline_units(config).size();
  const resnet::ResnetPartition partition{static_cast<i64>(unit_begin),
                                          unit_end == units ? resnet::kResnetAllUnits : static_cast<i64>(unit_end)};
  resnet::ResnetModelT<S> model(config, N, kernels::Backend::cpu, tracker, partition, 1, &recorder,
                                Residency::allocated, recompute);
  const std::vector<std::int32_t> labels(static_cast<std::size_t>(N), 0);
  const float image_placeholder = 0.0f;  // never read while recording
  const S placeholder{};
  if (model.has_stem())
    model.forward(0, &image_placeholder, labels.data(), N, true);
  else
    model.forward_stage(0, &placeholder, labels.data(), N, true);
  KernelCalls calls;
  calls.parameter_tensors = resnet::resnet_partition_parameter_tensors(config, partition);
  calls.forward = recorder.calls();
  recorder.clear();
  model.backward(0, model.has_head() ? nullptr : &placeholder);
  calls.backward = recorder.calls();
  return calls;
}

}  // namespace

KernelCalls gpt_stage_kernel_calls(const gpt::GptConfig& config, i64 tp, i64 blocks, bool first, bool last, i64 b,
                                   i64 t, const std::string& precision, Recompute recompute, bool sequence_parallel) {
  SB_CHECK(blocks >= 1 && b >= 1 && t >= 1, "gpt stage kernel calls: {} blocks, b {}, t {}", blocks, b, t);
  const bool sp = sequence_parallel;
  if (precision == "fp32") return record_gpt_stage<float>(config, tp, blocks, first, last, b, t, recompute, sp);
  if (precision == "bf16") return record_gpt_stage<bf16>(config, tp, blocks, first, last, b, t, recompute, sp);
  if (precision == "fp16") return record_gpt_stage<fp16>(config, tp, blocks, first, last, b, t, recompute, sp);
  SB_USER_CHECK(false, "unknown precision '{}' (fp32, bf16, fp16)", precision);
  return {};
}

bool resnet_kernel_calls_known(const resnet::ResnetConfig& config) {
  return config.block == resnet::ResnetBlock::basic && !config.stem_maxpool && !config.spec_only;
}

KernelCalls resnet_stage_kernel_calls(const resnet::ResnetConfig& config, std::size_t unit_begin,
                                      std::size_t unit_end, i64 n, const std::string& precision,
                                      Recompute recompute) {
  SB_USER_CHECK(resnet_kernel_calls_known(config),
                "resnet '{}': its kernel calls are known only for basic blocks without a stem max pool "
                "(the networks the trainer runs)", config.name);
  if (precision == "fp32") return record_resnet_stage<float>(config, unit_begin, unit_end, n, recompute);
  if (precision == "bf16") return record_resnet_stage<bf16>(config, unit_begin, unit_end, n, recompute);
  if (precision == "fp16") return record_resnet_stage<fp16>(config, unit_begin, unit_end, n, recompute);
  SB_USER_CHECK(false, "unknown precision '{}' (fp32, bf16, fp16)", precision);
  return {};
}

std::vector<KernelCall> optimizer_kernel_calls(const std::string& optimizer, i64 parameters,
                                               const std::vector<i64>& owned_tensors, int element_bytes) {
  SB_CHECK(optimizer == "adamw" || optimizer == "sgd", "optimizer kernel calls: '{}'", optimizer);
  const auto call = [](const char* kernel, i64 shape, const kernels::KernelWork& w) {
    return KernelCall{kernel, {shape}, w.size, w.flops, w.bytes};
  };
  const i64 gradient_bytes = parameters * static_cast<i64>(sizeof(float));
  std::vector<KernelCall> calls = {call("fill", gradient_bytes, kernels::fill_work(gradient_bytes))};
  for (const i64 owned : owned_tensors) {
    if (optimizer == "adamw")
      calls.push_back(call("adamw_step", owned, kernels::adamw_update_work(owned)));
    else
      calls.push_back(call("sgd_step", owned, kernels::sgd_update_work(owned)));
  }
  if (element_bytes < 4) calls.push_back(call("narrow", parameters, kernels::convert_work(parameters)));
  return calls;
}

std::vector<i64> owned_tensor_runs(const std::vector<i64>& tensors, int ranks, int rank) {
  SB_CHECK(ranks >= 1 && rank >= 0 && rank < ranks, "owned tensor runs: rank {} of {}", rank, ranks);
  if (ranks == 1) return tensors;
  i64 total = 0;
  for (const i64 n : tensors) total += n;
  const i64 shard = parallel::zero_shard_size(total, ranks);
  const i64 begin = shard * rank, end = std::min(total, begin + shard);
  std::vector<i64> runs;
  i64 offset = 0;
  for (const i64 n : tensors) {
    const i64 lo = std::max(offset, begin), hi = std::min(offset + n, end);
    if (lo < hi) runs.push_back(hi - lo);
    offset += n;
  }
  return runs;
}

bool negligible_kernel_call(const KernelCall& call) { return call.kernel == "batchnorm2d_statistics"; }

}  // namespace sb::costmodel
