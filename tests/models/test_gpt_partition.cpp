// SPDX-License-Identifier: Apache-2.0
// GPT pipeline stages in one process: 2 stages of gpt-nano and 3 stages of a 4-block variant,
// chained by hand (each stage's output into the next stage's input, input gradients back, the
// two halves of the tied wte gradient summed), two micro-batches alive at once in two
// activation slots, against the unsplit model on the same two micro-batches. Also: shards start
// as slices of the unsplit init, gradient-ready ranges tile each stage, tracked activation
// bytes grow with the slots, and invalid partitions are rejected. Leaves out the schedule
// engine and tensor parallelism over ranks (tests/parallel).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "models/gpt/gpt.hpp"

namespace sb::gpt {
namespace {

using kernels::Backend;
using i64 = std::int64_t;

// The stages run the same kernels on the same inputs as the unsplit model, so the losses and
// every gradient but wte are bit-identical; wte's two halves (head, embedding) are summed in
// another order than the one-rank model accumulates them: ~1e-7 of the tensor's largest value.
// Documented tolerance: |stage - unsplit| <= 1e-6 · max|unsplit gradient of that tensor|.
constexpr double kStageTolerance = 1e-6;
constexpr i64 kB = 2, kT = 16, kMicroBatches = 2;
constexpr std::uint64_t kSeed = 17;

struct MicroBatch {
  std::vector<std::int32_t> tokens, targets;
};

std::vector<MicroBatch> micro_batches(i64 vocab) {
  std::vector<MicroBatch> batches(kMicroBatches);
  const CounterRng rng(5, 1);
  for (i64 m = 0; m < kMicroBatches; ++m) {
    for (i64 i = 0; i < kB * kT; ++i) {
      const auto n = static_cast<std::uint64_t>(2 * (m * kB * kT + i));
      batches[m].tokens.push_back(static_cast<std::int32_t>(rng.below(n, static_cast<std::uint64_t>(vocab))));
      batches[m].targets.push_back(static_cast<std::int32_t>(rng.below(n + 1, static_cast<std::uint64_t>(vocab))));
    }
  }
  return batches;
}

std::map<std::string, ParameterView> by_name(GptModel& model) {
  std::map<std::string, ParameterView> views;
  for (auto& view : model.parameter_views()) views.emplace(view.name, view);
  return views;
}

int tensor_index(const std::string& name) {
  const auto specs = gpt_parameter_specs(gpt_config_by_name("gpt-nano"));
  for (int k = 0; k < kParameterTensorCount; ++k)
    if (name == specs[static_cast<std::size_t>(k)].name) return k;
  return -1;
}

// Runs `stages` (layer boundaries) with two slots against the unsplit model.
void expect_stages_match_unsplit(const GptConfig& config, const std::vector<i64>& bounds) {
  const auto batches = micro_batches(config.vocab);
  MemoryTracker tracker;
  GptModel whole(config, kB, kT, Backend::cpu, tracker);
  whole.init_weights(kSeed);
  whole.zero_grad();
  std::vector<float> whole_losses;
  for (const auto& mb : batches) {
    whole_losses.push_back(whole.forward(mb.tokens.data(), mb.targets.data(), kB, kT));
    whole.backward();
  }

  const std::size_t n = bounds.size() - 1;
  std::vector<std::unique_ptr<GptModel>> stages;
  std::vector<std::vector<std::pair<i64, i64>>> ready(n);
  for (std::size_t s = 0; s < n; ++s) {
    GptPartition partition;
    partition.layer_begin = bounds[s];
    partition.layer_end = bounds[s + 1];
    partition.embedding = s == 0;
    partition.head = s + 1 == n;
    partition.activation_slots = kMicroBatches;
    stages.push_back(std::make_unique<GptModel>(config, kB, kT, Backend::cpu, tracker, partition));
    stages[s]->init_weights(kSeed);
    stages[s]->zero_grad();
    stages[s]->set_gradient_ready_callback(
        [&ready, s](i64 offset, i64 count) { ready[s].push_back({offset, count}); });
  }
  // all forwards first (both slots alive), then the backwards, as GPipe
  std::vector<float> losses;
  for (i64 m = 0; m < kMicroBatches; ++m) {
    const float* previous = nullptr;
    for (std::size_t s = 0; s < n; ++s) {
      const float loss = stages[s]->forward_stage(m, batches[m].tokens.data(), previous,
                                                   batches[m].targets.data(), kB, kT);
      if (s + 1 < n) {
        EXPECT_TRUE(std::isnan(loss));
        previous = stages[s]->stage_output(m);
      } else {
        losses.push_back(loss);
      }
    }
  }
  for (i64 m = 0; m < kMicroBatches; ++m) {
    const float* doutput = nullptr;
    for (std::size_t s = n; s-- > 0;) {
      stages[s]->backward_stage(m, doutput);
      if (s > 0) doutput = stages[s]->stage_input_gradient();
    }
  }
  for (i64 m = 0; m < kMicroBatches; ++m) EXPECT_EQ(losses[m], whole_losses[m]) << "micro-batch " << m;

  // every tensor of every stage against its slice of the unsplit model
  auto whole_views = by_name(whole);
  const GptShard& last = stages.back()->shard();
  const auto head_wte = stages.back()->tied_embedding_gradient();
  const auto first_wte = stages.front()->tied_embedding_gradient();
  ASSERT_EQ(head_wte.size(), first_wte.size());
  double worst = 0;
  for (std::size_t s = 0; s < n; ++s) {
    for (auto& [name, view] : by_name(*stages[s])) {
      const int k = tensor_index(name);
      const ParameterView& ref = whole_views.at(name);
      const bool tied = name == "wte";
      if (tied && s + 1 == n && n > 1) continue;  // compared as the sum, with the first stage
      double max_ref = 0, max_err = 0;
      for (i64 i = 0; i < view.numel; ++i) {
        const i64 g = gpt_unsplit_index(stages[s]->shard(), k, i);
        ASSERT_LT(g, ref.numel);
        EXPECT_EQ(view.param[i], ref.param[g]) << name << " init, stage " << s;
        const double grad = tied ? static_cast<double>(first_wte[i]) + head_wte[i] : view.grad[i];
        max_ref = std::max(max_ref, std::abs(static_cast<double>(ref.grad[g])));
        max_err = std::max(max_err, std::abs(grad - ref.grad[g]));
      }
      const double relative = max_err / max_ref;
      worst = std::max(worst, relative);
      EXPECT_LE(relative, kStageTolerance) << name << " stage " << s;
    }
  }
  std::cout << fmt::format("[stages {}] largest gradient error / max|gradient| = {:.3e}\n", n, worst);
  EXPECT_EQ(last.L, bounds[n] - bounds[n - 1]);

  // gradient-ready ranges tile each stage's parameters once per backward (two backwards)
  for (std::size_t s = 0; s < n; ++s) {
    auto ranges = ready[s];
    ASSERT_EQ(ranges.size() % 2, 0u);
    ranges.resize(ranges.size() / 2);
    std::sort(ranges.begin(), ranges.end());
    i64 next = 0;
    for (const auto& [offset, count] : ranges) {
      EXPECT_EQ(offset, next) << "stage " << s;
      next = offset + count;
    }
    EXPECT_EQ(next, stages[s]->parameter_count()) << "stage " << s;
  }
}

TEST(GptStages, TwoStagesOfNanoMatchTheUnsplitModel) {
  expect_stages_match_unsplit(gpt_config_by_name("gpt-nano"), {0, 1, 2});
}

TEST(GptStages, ThreeStagesMatchTheUnsplitModel) {
  const GptConfig four_blocks{"nano-4-blocks", 4, 64, 4, 64, 256};
  expect_stages_match_unsplit(four_blocks, {0, 1, 3, 4});
}

TEST(GptStages, ActivationSlotsAreTrackedAndStagesHoldTheirTensors) {
  const GptConfig config = gpt_config_by_name("gpt-nano");
  MemoryTracker one, two;
  GptPartition first{.layer_begin = 0, .layer_end = 1, .embedding = true, .head = false};
  GptModel a(config, kB, kT, Backend::cpu, one, first);
  first.activation_slots = 3;
  GptModel b(config, kB, kT, Backend::cpu, two, first);
  const i64 slot = gpt_shard_activation_bytes(a.shard(), kB, kT).total + 2 * kB * kT * 4;
  EXPECT_EQ(one.usage().of(MemoryCategory::activations), slot);
  EXPECT_EQ(two.usage().of(MemoryCategory::activations), 3 * slot);
  EXPECT_EQ(b.slot_activation_bytes(), slot);
  EXPECT_EQ(b.activation_slots(), 3);
  EXPECT_EQ(one.usage().of(MemoryCategory::params), two.usage().of(MemoryCategory::params));
  // first stage: wte, wpe and one block; no final LayerNorm
  std::vector<std::string> names;
  for (const auto& view : a.parameter_views()) names.push_back(view.name);
  EXPECT_EQ(names.front(), "wte");
  EXPECT_EQ(names[1], "wpe");
  EXPECT_EQ(std::count(names.begin(), names.end(), "lnfw"), 0);
  const i64 C = config.channels;
  EXPECT_EQ(a.parameter_count(), config.vocab * C + config.max_seq_len * C + 12 * C * C + 13 * C);

  // the head stage's wte is a replica for the global norm; the first stage's is not
  MemoryTracker three;
  GptModel head(config, kB, kT, Backend::cpu, three,
                {.layer_begin = 1, .layer_end = 2, .embedding = false, .head = true});
  for (const auto& slice : head.parameter_slices()) EXPECT_EQ(slice.replica, slice.name == "wte") << slice.name;
  for (const auto& slice : a.parameter_slices()) EXPECT_FALSE(slice.replica) << slice.name;
  EXPECT_THROW(head.stage_input_gradient(), Error);
  EXPECT_THROW(a.stage_output(0), Error);  // before its forward
}

TEST(GptStages, InvalidPartitionsNameTheReason) {
  const GptConfig config = gpt_config_by_name("gpt-nano");
  MemoryTracker tracker;
  const auto message = [&](GptPartition partition) -> std::string {
    try {
      GptModel model(config, 1, 8, Backend::cpu, tracker, std::move(partition));
    } catch (const UserError& e) {
      return e.what();
    }
    return "no error";
  };
  GptPartition tp3;
  tp3.tp.size = 3;
  tp3.tp.all_reduce_sum = tp3.tp.all_reduce_max = [](std::span<float>) {};
  EXPECT_NE(message(tp3).find("tp = 3 must divide the attention heads (4)"), std::string::npos)
      << message(tp3);
  GptPartition no_hooks;
  no_hooks.tp.size = 2;
  EXPECT_NE(message(no_hooks).find("needs the tp group's all-reduce hooks"), std::string::npos);
  EXPECT_NE(message({.layer_begin = 1, .layer_end = 3}).find("0 <= begin < end <= layers (2)"),
            std::string::npos);
  EXPECT_NE(message({.layer_begin = 1, .layer_end = 1}).find("got [1, 1)"), std::string::npos);
}

}  // namespace
}  // namespace sb::gpt
