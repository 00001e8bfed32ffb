// SPDX-License-Identifier: Apache-2.0
// Where a non-finite value first appears in the GPT, as the trainer's non-finite check names
// it (core/finite_scan.hpp over GptModel::forward_values and gradient_values): an infinity
// written into one weight of block 1 shows first in that block's activation, and a NaN
// written into one gradient is named with its block.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/finite_scan.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "models/gpt/gpt.hpp"

namespace sb::gpt {
namespace {

using kernels::Backend;

struct Batch {
  std::vector<std::int32_t> tokens, targets;
};

Batch random_batch(std::int64_t B, std::int64_t T) {
  Batch b{std::vector<std::int32_t>(static_cast<std::size_t>(B * T)), {}};
  const CounterRng rng(5, 1);
  for (std::size_t i = 0; i < b.tokens.size(); ++i) b.tokens[i] = static_cast<std::int32_t>(rng.below(i, 256));
  b.targets.assign(b.tokens.begin() + 1, b.tokens.end());
  b.targets.push_back(0);
  return b;
}

// One forward and backward of gpt-nano (B=2, T=16) on the cpu back-end, weights from seed 1.
void forward_backward(GptModel& model) {
  model.init_weights(1);
  const Batch b = random_batch(2, 16);
  model.zero_grad();
  model.forward(b.tokens.data(), b.targets.data(), 2, 16);
  model.backward();
}

TEST(GptNonFinite, AllFiniteAfterAnOrdinaryStep) {
  MemoryTracker tracker;
  GptModel model(gpt_config_by_name("gpt-nano"), 2, 16, Backend::cpu, tracker);
  forward_backward(model);
  const auto acts = model.forward_values(0), grads = model.gradient_values();
  EXPECT_FALSE(first_non_finite(acts));
  EXPECT_FALSE(first_non_finite(grads));
  // forward order: the embedding, 15 tensors per block, the head's 6 (losses included)
  ASSERT_EQ(acts.size(), 1u + 2 * 15 + 6);
  EXPECT_EQ(describe_tensor(acts[1]), "blocks.0.ln1 (layer 0)");
  EXPECT_EQ(describe_tensor(acts.back()), "losses");
  ASSERT_EQ(grads.size(), 2u + 2 * 12 + 2);
  EXPECT_EQ(describe_tensor(grads[2 + 12 + 8]), "blocks.1.fcw (layer 1)");
}

TEST(GptNonFinite, InfiniteWeightShowsFirstInItsBlocksActivation) {
  MemoryTracker tracker;
  const GptConfig config = gpt_config_by_name("gpt-nano");
  GptModel model(config, 2, 16, Backend::cpu, tracker);
  model.init_weights(1);
  const std::int64_t C = config.channels;
  // one weight of block 1's first MLP matrix fcw (L, 4C, C)
  model.parameters_flat()[static_cast<std::size_t>(model.params().fcw - model.params().wte + 4 * C * C + 3)] =
      std::numeric_limits<float>::infinity();
  const Batch b = random_batch(2, 16);
  model.zero_grad();
  const float loss = model.forward(b.tokens.data(), b.targets.data(), 2, 16);
  EXPECT_FALSE(std::isfinite(loss));
  const auto acts = model.forward_values(0);
  const auto hit = first_non_finite(acts);
  ASSERT_TRUE(hit);
  EXPECT_EQ(describe_tensor(acts[hit->tensor]), "blocks.1.fch (layer 1)");
}

TEST(GptNonFinite, NanGradientIsNamedWithItsBlock) {
  MemoryTracker tracker;
  GptModel model(gpt_config_by_name("gpt-nano"), 2, 16, Backend::cpu, tracker);
  forward_backward(model);
  const std::int64_t C = model.config().channels;
  // the last element of block 1's attention projection attprojw (L, C, C)
  const std::size_t at = static_cast<std::size_t>(model.grads().attprojw - model.grads().wte + 2 * C * C - 1);
  model.gradients_flat()[at] = std::numeric_limits<float>::quiet_NaN();
  const auto grads = model.gradient_values();
  const auto hit = first_non_finite(grads);
  ASSERT_TRUE(hit);
  EXPECT_EQ(describe_tensor(grads[hit->tensor]), "blocks.1.attprojw (layer 1)");
  EXPECT_EQ(hit->element, C * C - 1);
}

}  // namespace
}  // namespace sb::gpt
