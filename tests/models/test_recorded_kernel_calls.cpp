// SPDX-License-Identifier: Apache-2.0
// The kernel calls the cost model times (costmodel/kernel_calls.hpp, recorded from record-only
// models) against a recording of real training micro-batches of the same models: gpt-tiny and
// resnet-mini, tp 1 and 2, pp 1 and 2, fp32 and bf16, call by call. Leaves out the timing of the
// calls (tests/costmodel/test_kernel_calls.cpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <cmath>
#include <random>
#include <span>

#include "core/memory.hpp"
#include "costmodel/kernel_calls.hpp"
#include "kernels/kernel_recorder.hpp"
#include "models/gpt/gpt.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_partition.hpp"

namespace sb {
namespace {

using i64 = std::int64_t;
using kernels::KernelCall;
using kernels::KernelRecorder;

std::vector<std::string> names(const std::vector<KernelCall>& calls) {
  std::vector<std::string> n;
  for (const KernelCall& c : calls) n.push_back(c.kernel);
  return n;
}

template <class S>
std::vector<S> values(i64 n, float scale) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<S> v(static_cast<std::size_t>(n));
  for (S& x : v) {
    if constexpr (std::is_same_v<S, float>) x = u(rng);
    else x = to_bf16(u(rng));
  }
  return v;
}

// One micro-batch of one stage of gpt-tiny, trained for real with a recorder attached.
template <class S>
costmodel::KernelCalls train_gpt_stage(const gpt::GptConfig& g, int tp, i64 begin, i64 end, i64 B, i64 T) {
  KernelRecorder recorder;
  MemoryTracker tracker;
  gpt::GptPartition partition;
  partition.layer_begin = begin;
  partition.layer_end = end;
  partition.embedding = begin == 0;
  partition.head = end == g.layers;
  partition.tp.size = tp;
  partition.tp.all_reduce_sum = partition.tp.all_reduce_max = [](std::span<float>) {};  // one rank stands in
  gpt::GptModelT<S> model(g, B, T, kernels::Backend::cpu, tracker, partition, 0, &recorder);
  model.init_weights(3);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(B * T));
  for (std::size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<std::int32_t>((i * 37) % g.vocab);
  const std::vector<S> input = values<S>(B * T * g.channels, 1.0f), doutput = values<S>(B * T * g.channels, 1e-3f);
  const float loss = model.forward_stage(0, partition.embedding ? tokens.data() : nullptr,
                                         partition.embedding ? nullptr : input.data(),
                                         partition.head ? tokens.data() : nullptr, B, T);
  EXPECT_EQ(std::isfinite(loss), partition.head);
  costmodel::KernelCalls calls;
  calls.forward = recorder.calls();
  recorder.clear();
  model.backward_stage(0, partition.head ? nullptr : doutput.data());
  calls.backward = recorder.calls();
  return calls;
}

template <class S>
void expect_gpt_calls_recorded(const char* precision) {
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-tiny");  // 4 blocks
  const i64 B = 2, T = 32;
  for (int tp : {1, 2})
    for (int pp : {1, 2})
      for (int stage = 0; stage < pp; ++stage) {
        const i64 per_stage = g.layers / pp, begin = stage * per_stage, end = begin + per_stage;
        const costmodel::KernelCalls trained = train_gpt_stage<S>(g, tp, begin, end, B, T);
        const costmodel::KernelCalls predicted =
            costmodel::gpt_stage_kernel_calls(g, tp, per_stage, begin == 0, end == g.layers, B, T, precision);
        const std::string where = fmt::format("{} tp {} pp {} stage {}", precision, tp, pp, stage);
        ASSERT_EQ(names(predicted.forward), names(trained.forward)) << where;
        ASSERT_EQ(names(predicted.backward), names(trained.backward)) << where;
        EXPECT_EQ(predicted.forward, trained.forward) << where;
        EXPECT_EQ(predicted.backward, trained.backward) << where;
      }
}

TEST(RecordedKernelCalls, GptStagesAreWhatATrainingMicroBatchCalls) {
  expect_gpt_calls_recorded<float>("fp32");
  expect_gpt_calls_recorded<bf16>("bf16");
}

template <class S>
costmodel::KernelCalls train_resnet_stage(const resnet::ResnetConfig& r, resnet::ResnetPartition part, i64 N) {
  KernelRecorder recorder;
  MemoryTracker tracker;
  resnet::ResnetModelT<S> model(r, N, kernels::Backend::cpu, tracker, part, 1, &recorder);
  model.init_weights(3);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(N));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % r.classes);
  const std::vector<float> images = values<float>(N * model.input_floats_per_image(), 1.0f);
  const std::vector<S> input = values<S>(N * model.input_floats_per_image(), 1.0f);
  const std::vector<S> doutput = values<S>(N * model.output_floats_per_image(), 1e-3f);
  if (model.has_stem())
    model.forward(0, images.data(), labels.data(), N, true);
  else
    model.forward_stage(0, input.data(), labels.data(), N, true);
  costmodel::KernelCalls calls;
  calls.forward = recorder.calls();
  recorder.clear();
  model.backward(0, model.has_head() ? nullptr : doutput.data());
  calls.backward = recorder.calls();
  return calls;
}

template <class S>
void expect_resnet_calls_recorded(const char* precision) {
  const resnet::ResnetConfig r = resnet::resnet_config_by_name("resnet-mini");
  const i64 N = 3;
  for (int pp : {1, 2}) {
    const std::vector<i64> sizes = resnet::resnet_balanced_units_per_stage(r, pp);
    std::size_t begin = 0;
    const std::vector<resnet::ResnetPartition> parts = resnet::resnet_stage_partitions(r, sizes);
    for (std::size_t s = 0; s < parts.size(); ++s) {
      const std::size_t first = begin, last = begin + static_cast<std::size_t>(sizes[s]);
      const costmodel::KernelCalls trained = train_resnet_stage<S>(r, parts[s], N);
      const costmodel::KernelCalls predicted = costmodel::resnet_stage_kernel_calls(r, first, last, N, precision);
      const std::string where = fmt::format("{} pp {} stage {}", precision, pp, s);
      ASSERT_EQ(names(predicted.forward), names(trained.forward)) << where;
      ASSERT_EQ(names(predicted.backward), names(trained.backward)) << where;
      EXPECT_EQ(predicted.forward, trained.forward) << where;
      EXPECT_EQ(predicted.backward, trained.backward) << where;
      begin = last;
    }
  }
}

TEST(RecordedKernelCalls, ResnetStagesAreWhatATrainingMicroBatchCalls) {
  expect_resnet_calls_recorded<float>("fp32");
  expect_resnet_calls_recorded<bf16>("bf16");
}

// A record-only model holds no memory, whatever its size: gpt-small at 128 sequences.
TEST(RecordedKernelCalls, RecordingHoldsNoMemory) {
  KernelRecorder recorder(KernelRecorder::Mode::record_only);
  MemoryTracker tracker;
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-small");
  gpt::GptModelT<float> model(g, 128, g.max_seq_len, kernels::Backend::cpu, tracker, {}, 0, &recorder);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(128 * g.max_seq_len), 1);
  EXPECT_TRUE(std::isnan(model.forward(tokens.data(), tokens.data(), 128, g.max_seq_len)));
  model.backward();
  EXPECT_EQ(tracker.usage().total_peak, 0);
  const std::vector<std::string> first_block = names(recorder.units().at(1).calls);
  EXPECT_EQ(recorder.units().at(0).unit, "embedding");
  EXPECT_EQ(first_block, (std::vector<std::string>{"layernorm_forward", "matmul_forward", "attention_forward",
                                                   "matmul_forward", "residual_forward", "layernorm_forward",
                                                   "matmul_forward", "gelu_forward", "matmul_forward",
                                                   "residual_forward"}));
}

}  // namespace
}  // namespace sb
