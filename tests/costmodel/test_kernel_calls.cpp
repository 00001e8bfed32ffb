// SPDX-License-Identifier: Apache-2.0
// The kernel calls the cost model records from the trainer's models (their FLOPs, how stages
// compose) and a prediction from kernel times (the kernel-time table: test_kernel_profile.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>

#include "core/check.hpp"
#include "costmodel/kernel_calls.hpp"
#include "costmodel/kernel_profile.hpp"
#include "costmodel/step_prediction.hpp"
#include "costmodel_test_support.hpp"
#include "core/memory.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_flops.hpp"
#include "models/resnet/resnet_partition.hpp"

namespace sb::costmodel {
namespace {

using testing::gpt_case;
using testing::site;

bool computes(const KernelCall& c) {
  return c.kernel.starts_with("matmul") || c.kernel.starts_with("attention") || c.kernel.starts_with("conv2d");
}
double compute_flops(const std::vector<KernelCall>& calls) {
  double sum = 0;
  for (const KernelCall& c : calls)
    if (computes(c)) sum += c.flops;
  return sum;
}

// The recorded calls' FLOPs (kernels.hpp's estimates) add up to the models' FLOP counts.
TEST(KernelCalls, GptMatmulsAndAttentionAreTheTrainersFlops) {
  for (const char* name : {"gpt-nano", "gpt-tiny"}) {
    const gpt::GptConfig g = gpt::gpt_config_by_name(name);
    for (std::int64_t tp : {1, 2, 4}) {
      const KernelCalls k = gpt_stage_kernel_calls(g, tp, g.layers, true, true, 4, g.max_seq_len, "fp32");
      // a tp rank does 1/tp of every GEMM and of attention
      EXPECT_NEAR(compute_flops(k.forward) * static_cast<double>(tp), gpt::gpt_forward_flops(g, 4, g.max_seq_len),
                  1e-6) << name << tp;
      EXPECT_NEAR(compute_flops(k.backward), 2.0 * compute_flops(k.forward), 1e-6) << name << tp;
      for (const auto* list : {&k.forward, &k.backward})  // GEMM-like calls interpolate on FLOPs
        for (const KernelCall& c : *list)
          if (computes(c)) EXPECT_EQ(c.size, c.flops) << c.kernel;
    }
  }
}

// Recomputation's calls are recorded where the model makes them, inside the backward: selective
// one attention forward per block, full the block's forward but its output's residual add; the
// forward is unchanged.
TEST(KernelCalls, GptRecomputedForwardIsInTheBackward) {
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-tiny");
  const auto count = [](const std::vector<KernelCall>& calls, const char* kernel) {
    return std::count_if(calls.begin(), calls.end(), [&](const KernelCall& c) { return c.kernel == kernel; });
  };
  const std::int64_t blocks = g.layers;
  const KernelCalls none = gpt_stage_kernel_calls(g, 2, blocks, true, true, 2, 64, "fp32", Recompute::none);
  const KernelCalls selective = gpt_stage_kernel_calls(g, 2, blocks, true, true, 2, 64, "fp32", Recompute::selective);
  const KernelCalls full = gpt_stage_kernel_calls(g, 2, blocks, true, true, 2, 64, "fp32", Recompute::full);
  EXPECT_EQ(selective.forward, none.forward);
  EXPECT_EQ(full.forward, none.forward);
  EXPECT_EQ(count(none.backward, "attention_forward"), 0);
  EXPECT_EQ(count(selective.backward, "attention_forward"), blocks);
  EXPECT_EQ(count(selective.backward, "matmul_forward"), 0);
  EXPECT_EQ(count(full.backward, "attention_forward"), blocks);
  EXPECT_EQ(count(full.backward, "matmul_forward"), 4 * blocks);
  EXPECT_EQ(count(full.backward, "layernorm_forward"), 2 * blocks);
  EXPECT_EQ(count(full.backward, "residual_forward"), blocks);  // residual2 only: the output is kept
  EXPECT_EQ(full.backward.size(), none.backward.size() + static_cast<std::size_t>(blocks) * 9);
  // full recomputation adds one forward of the blocks' GEMMs and attention (Narayanan et al. eq. 3)
  const double block_forward = compute_flops(full.backward) - compute_flops(none.backward);
  EXPECT_NEAR(block_forward * 2, static_cast<double>(blocks) * gpt::gpt_block_forward_flops(g, 2, 64), 1e-6);
}

// Stages compose: a stage's calls are its embedding's, its blocks' and its head's.
TEST(KernelCalls, GptStagesSplitTheModelsCalls) {
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-tiny");  // C 256, 8 heads, 4 blocks
  const KernelCalls whole = gpt_stage_kernel_calls(g, 2, 4, true, true, 2, 128, "bf16");
  const KernelCalls first = gpt_stage_kernel_calls(g, 2, 2, true, false, 2, 128, "bf16");
  const KernelCalls last = gpt_stage_kernel_calls(g, 2, 2, false, true, 2, 128, "bf16");
  EXPECT_EQ(first.forward.size() + last.forward.size(), whole.forward.size());
  // the last stage's forward ends with the whole model's; qkv of this rank's 4 heads (BT, C) x (3C/t, C)
  EXPECT_TRUE(std::equal(last.forward.begin(), last.forward.end(), whole.forward.end() - last.forward.size()));
  EXPECT_EQ(first.forward[2].shape, (std::vector<std::int64_t>{256, 256, 384}));
  EXPECT_EQ(first.forward[3].shape, (std::vector<std::int64_t>{2, 128, 128, 4}));
  EXPECT_EQ(whole.forward.back().kernel, "crossentropy_shard_finish");
  // a stage without the head opens its backward by zeroing d(output) before it copies it in
  EXPECT_EQ(first.backward.front().kernel, "fill");
  EXPECT_EQ(first.backward.front().shape, (std::vector<std::int64_t>{256 * 256 * 2}));
  EXPECT_EQ(first.backward.size() + last.backward.size(), whole.backward.size() + 1);
}

TEST(KernelCalls, ResnetConvolutionsAreTheTrainersFlops) {
  const resnet::ResnetConfig r = resnet::resnet_config_by_name("resnet-mini");
  const std::size_t units = resnet::resnet_pipeline_units(r).size();
  const KernelCalls k = resnet_stage_kernel_calls(r, 0, units, 16, "fp32");
  EXPECT_NEAR(compute_flops(k.forward), resnet::resnet_forward_flops(r, 16), 1e-3);
  // the stem computes no input gradient: its backward is the weight gradient alone
  const KernelCalls stem = resnet_stage_kernel_calls(r, 0, 1, 16, "fp32");
  EXPECT_NEAR(compute_flops(k.backward), 2.0 * compute_flops(k.forward) - compute_flops(stem.forward), 1e-3);
  EXPECT_EQ(stem.backward.back().kernel, "conv2d_backward_weight");
  EXPECT_TRUE(resnet_kernel_calls_known(r));
  EXPECT_FALSE(resnet_kernel_calls_known(resnet::resnet_config_by_name("resnet-50")));
  EXPECT_THROW(resnet_stage_kernel_calls(resnet::resnet_config_by_name("resnet-50"), 1, 2, 1, "fp32"), UserError);
}

// The optimizer's tensors of a stage are the ones the trainer's model steps: a real model's
// parameter_slices, stage by stage, for the GPT (tp 1 and a tp shard's sizes) and the ResNet.
TEST(KernelCalls, StageParameterTensorsAreTheModelsSlices) {
  const auto slice_sizes = [](std::vector<optim::ParameterSlice> slices) {
    std::vector<std::int64_t> sizes;
    for (const optim::ParameterSlice& s : slices) sizes.push_back(s.numel);
    return sizes;
  };
  MemoryTracker tracker;
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-nano");
  for (const auto& [begin, end] : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, g.layers}, {0, 1}, {1, g.layers}}) {
    gpt::GptPartition partition;
    partition.layer_begin = begin, partition.layer_end = end;
    partition.embedding = begin == 0, partition.head = end == g.layers;
    gpt::GptModel model(g, 1, 8, kernels::Backend::cpu, tracker, partition);
    const KernelCalls calls = gpt_stage_kernel_calls(g, 1, end - begin, partition.embedding, partition.head, 1, 8, "fp32");
    EXPECT_EQ(calls.parameter_tensors, slice_sizes(model.parameter_slices())) << "blocks " << begin << ".." << end;
  }
  // tp 2: every tensor but the replicated ones halved, 16 in all on a whole stage
  const KernelCalls one = gpt_stage_kernel_calls(g, 1, g.layers, true, true, 1, 8, "fp32");
  const KernelCalls two = gpt_stage_kernel_calls(g, 2, g.layers, true, true, 1, 8, "fp32");
  ASSERT_EQ(one.parameter_tensors.size(), 16u);
  ASSERT_EQ(two.parameter_tensors.size(), 16u);
  EXPECT_EQ(two.parameter_tensors[4] * 2, one.parameter_tensors[4]);  // qkvw
  EXPECT_EQ(two.parameter_tensors[2], one.parameter_tensors[2]);      // ln1w, replicated
  const resnet::ResnetConfig r = resnet::resnet_config_by_name("resnet-mini");
  const std::size_t units = resnet::resnet_pipeline_units(r).size();
  for (const auto& [begin, end] : std::vector<std::pair<std::size_t, std::size_t>>{{0, units}, {0, 2}, {2, units}}) {
    const resnet::ResnetPartition partition{static_cast<std::int64_t>(begin),
                                            end == units ? resnet::kResnetAllUnits : static_cast<std::int64_t>(end)};
    resnet::ResnetModel model(r, 4, kernels::Backend::cpu, tracker, partition, 1);
    EXPECT_EQ(resnet_stage_kernel_calls(r, begin, end, 4, "fp32").parameter_tensors,
              slice_sizes(model.parameter_slices()))
        << "units " << begin << ".." << end;
  }
}

// ZeRO cuts the tensors laid end to end at the shards' edges, as the trainer's shard_slices does;
// the optimizer makes one call per owned run.
TEST(KernelCalls, ZeroOwnersStepTheirShardsRuns) {
  const std::vector<std::int64_t> tensors = {10, 5, 7};  // 22 elements
  EXPECT_EQ(owned_tensor_runs(tensors, 1, 0), tensors);
  EXPECT_EQ(owned_tensor_runs(tensors, 2, 0), (std::vector<std::int64_t>{10, 1}));  // shards of 11
  EXPECT_EQ(owned_tensor_runs(tensors, 2, 1), (std::vector<std::int64_t>{4, 7}));
  EXPECT_EQ(owned_tensor_runs(tensors, 3, 1), (std::vector<std::int64_t>{2, 5, 1}));  // [8, 16)
  EXPECT_EQ(owned_tensor_runs(tensors, 3, 2), (std::vector<std::int64_t>{6}));
  EXPECT_TRUE(owned_tensor_runs({3}, 4, 3).empty());  // shards of 1: the last rank owns padding only
  const std::vector<KernelCall> calls = optimizer_kernel_calls("adamw", 22, {10, 1}, 2);
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].kernel, "fill");
  EXPECT_EQ(calls[0].shape, (std::vector<std::int64_t>{88}));
  EXPECT_EQ(calls[1].kernel, "adamw_step");
  EXPECT_EQ(calls[2].shape, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(calls[3].kernel, "narrow");
}

// gpt-nano at global batch 16, micro-batches of 8, one thread a rank, AdamW, over dp ranks.
plan::TrainConfig gpt_nano_case(std::int64_t dp) {
  plan::TrainConfig c = gpt_case(1, 1, 1, dp, 1, 1, 16, 8, "fp32");
  c.model = plan::ModelSpec{};
  c.model.name = "gpt-nano";
  c.threads = 1;
  c.optimizer.type = "adamw";
  return c;
}

// Every distinct call of gpt-nano timed at its own figure: a micro-batch's forward and backward
// are the sums over the recorded calls, and the step is theirs plus the optimizer's calls.
TEST(StepPrediction, KernelTimesMakeTheComputeTime) {
  SiteProfile machine = site("this-machine");
  auto times = std::make_shared<KernelProfile>();
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-nano");
  const KernelCalls k = gpt_stage_kernel_calls(g, 1, g.layers, true, true, 8, 64, "fp32");
  std::map<std::pair<std::string, std::vector<std::int64_t>>, double> seconds;
  double micro_batch_s = 0;
  for (const auto* list : {&k.forward, &k.backward})
    for (const KernelCall& c : *list) {
      const auto [at, added] = seconds.try_emplace({c.kernel, c.shape}, 1e-3 * static_cast<double>(seconds.size() + 1));
      if (added) times->add({c.kernel, "fp32", 1, 1, c.shape, c.size, at->second});
      micro_batch_s += at->second;
    }
  for (const char* kernel : {"fill", "adamw_step"}) times->add({kernel, "fp32", 1, 1, {1}, 1, 1e-9});
  machine.kernel_times = times;

  plan::TrainConfig c = gpt_nano_case(1);
  const Prediction p = predict_step(c, machine);
  ASSERT_TRUE(p.feasible) << p.reason;
  EXPECT_TRUE(p.kernel_timed);
  EXPECT_NEAR(p.compute_s, 2 * micro_batch_s, 1e-9);  // two micro-batches of 8
  EXPECT_GT(p.optimizer_s, 0.0);
  EXPECT_NEAR(p.step_time_s, p.compute_s + p.optimizer_s, 1e-12);

  c.threads = 2;  // no times for two cores: FLOPs at the datasheet peak
  EXPECT_FALSE(predict_step(c, machine).kernel_timed);
}

// gpt-nano's calls timed at 1 ms with one rank computing on the node and 2 ms with two: a
// data-parallel pair always computes together (the busy cost), the stages of a pipeline take
// turns, so part of their work runs at the alone cost (the simulation re-prices it).
TEST(StepPrediction, PipelineStagesRunPartlyAtTheAloneCost) {
  SiteProfile machine = site("this-machine");
  machine.devices_per_node = 2;
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-nano");
  const KernelCalls whole = gpt_stage_kernel_calls(g, 1, g.layers, true, true, 8, 64, "fp32");
  const KernelCalls first = gpt_stage_kernel_calls(g, 1, g.layers / 2, true, false, 4, 64, "fp32");
  const KernelCalls last = gpt_stage_kernel_calls(g, 1, g.layers / 2, false, true, 4, 64, "fp32");
  auto times = std::make_shared<KernelProfile>();
  for (const KernelCalls* k : {&whole, &first, &last})
    for (const auto* list : {&k->forward, &k->backward})
      for (const KernelCall& call : *list)
        for (const int ranks : {1, 2}) times->add({call.kernel, "fp32", 1, ranks, call.shape, call.size, 1e-3 * ranks});
  for (const char* kernel : {"fill", "adamw_step"})
    for (const int ranks : {1, 2}) times->add({kernel, "fp32", 1, ranks, {1}, 1, 1e-9});
  machine.kernel_times = times;

  plan::TrainConfig c = gpt_nano_case(2);
  const Prediction dp = predict_step(c, machine);
  ASSERT_TRUE(dp.feasible) << dp.reason;
  ASSERT_TRUE(dp.kernel_timed);
  // one micro-batch of 8 per rank, both ranks computing throughout
  EXPECT_NEAR(dp.compute_s, 2e-3 * static_cast<double>(whole.forward.size() + whole.backward.size()), 1e-9);

  c.strategy.dp = 1;
  c.strategy.pp = 2;
  c.micro_batch = 4;
  const Prediction pp = predict_step(c, machine);
  ASSERT_TRUE(pp.feasible) << pp.reason;
  ASSERT_TRUE(pp.kernel_timed);
  ASSERT_EQ(pp.micro_batches, 4);
  const KernelCalls& critical = pp.critical_stage == 0 ? first : last;
  const double alone_s = 4 * 1e-3 * static_cast<double>(critical.forward.size() + critical.backward.size());
  EXPECT_GT(pp.compute_s, alone_s * 1.05) << "the stages' steady state overlaps";
  EXPECT_LT(pp.compute_s, 2 * alone_s * 0.95) << "the pipeline's fill and drain run alone";
}

}  // namespace
}  // namespace sb::costmodel
