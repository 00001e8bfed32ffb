// SPDX-License-Identifier: Apache-2.0
// GPT model properties that need no golden file: configs, FLOP formula, tracked bytes,
// initialisation, batch-shape independence, and AdamW clipping. Leaves out PyTorch parity.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "optim/adamw.hpp"
#include "optim/gradient_clipping.hpp"
#include "tests/models/backend_param.hpp"

namespace sb::gpt {
namespace {

using kernels::Backend;

TEST(GptConfig, NamedConfigsAndUnknownName) {
  EXPECT_EQ(gpt_config_names(),
            (std::vector<std::string>{"gpt-nano", "gpt-tiny", "gpt-small", "gpt2-124m", "gpt-1.3b",
                                      "gpt-6.7b", "gpt-13b", "gpt-175b", "gpt-530b", "gpt-1t",
                                      "llama3-8b", "llama3-70b", "llama3-405b", "llama3.1-8b", "llama3.1-70b",
                                      "llama3.1-405b", "llama2-7b", "llama2-13b", "llama2-70b", "nemotron4-15b",
                                      "nemotron4-340b"}));
  const GptConfig tiny = gpt_config_by_name("gpt-tiny");
  EXPECT_EQ(tiny.layers, 4);
  EXPECT_EQ(tiny.channels, 256);
  EXPECT_EQ(tiny.heads, 8);
  EXPECT_EQ(tiny.max_seq_len, 128);
  EXPECT_EQ(tiny.vocab, 256);
  try {
    gpt_config_by_name("gpt-huge");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(),
                 "unknown model 'gpt-huge' (known: gpt-nano, gpt-tiny, gpt-small, gpt2-124m, "
                 "gpt-1.3b, gpt-6.7b, gpt-13b, gpt-175b, gpt-530b, gpt-1t, llama3-8b, llama3-70b, "
                 "llama3-405b, llama3.1-8b, llama3.1-70b, llama3.1-405b, llama2-7b, llama2-13b, llama2-70b, "
                 "nemotron4-15b, nemotron4-340b)");
  }
}

TEST(GptConfig, ValidationNamesTheField) {
  GptConfig config{"inline", 2, 65, 4, 64, 256};
  try {
    validate_gpt_config(config);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("channels (65) must be divisible by heads (4)"),
              std::string::npos)
        << e.what();
  }
  config.channels = 64;
  config.max_seq_len = 0;
  try {
    validate_gpt_config(config);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("max_seq_len must be positive"), std::string::npos)
        << e.what();
  }
}

TEST(GptConfig, ParameterCountMatchesShapesAndGpt2) {
  for (const auto& name : gpt_config_names()) {
    const GptConfig config = gpt_config_by_name(name);
    if (config.block != GptBlock::gpt2) continue;  // not the trainer's model: test_model_description.cpp
    std::int64_t sum = 0;
    for (const auto& spec : gpt_parameter_specs(config)) sum += spec.shape.numel();
    EXPECT_EQ(sum, gpt_parameter_count(config)) << name;
  }
  // llm.c reports 124475904 for GPT-2 small with the vocabulary padded to 50304.
  EXPECT_EQ(gpt_parameter_count(gpt_config_by_name("gpt2-124m")), 124475904);
}

TEST(GptFlops, ThreeForwardsEqualsMegatronFormula) {
  for (const auto& name : gpt_config_names()) {
    const GptConfig c = gpt_config_by_name(name);
    if (c.block != GptBlock::gpt2) continue;  // Megatron's formula is for GPT-2 blocks
    const double B = 8, T = static_cast<double>(c.max_seq_len);
    const double L = static_cast<double>(c.layers), C = static_cast<double>(c.channels);
    const double V = static_cast<double>(c.vocab);
    const double megatron = 72 * B * T * L * C * C * (1 + T / (6 * C) + V / (12 * L * C));
    EXPECT_NEAR(gpt_training_flops(c, 8, c.max_seq_len) / megatron, 1.0, 1e-12) << name;
  }
}

TEST(GptMemory, TrackedBytesAreExact) {
  for (const char* name : {"gpt-nano", "gpt-tiny", "gpt-small"}) {
    const GptConfig config = gpt_config_by_name(name);
    const std::int64_t N = gpt_parameter_count(config);
    MemoryTracker tracker;
    {
      GptModel model(config, 2, 16, Backend::reference, tracker);
      optim::AdamW optimizer(model.parameter_slices(), optim::AdamWConfig{}, Backend::reference,
                             tracker);
      const MemoryUsage& usage = tracker.usage();
      EXPECT_EQ(usage.of(MemoryCategory::params), 4 * N) << name;
      EXPECT_EQ(usage.of(MemoryCategory::grads), 4 * N) << name;
      EXPECT_EQ(usage.of(MemoryCategory::optimizer), 8 * N) << name;
      EXPECT_EQ(usage.of(MemoryCategory::activations),
                gpt_activation_bytes(config, 2, 16) + 2 * 2 * 16 * 4)  // + int32 tokens, targets
          << name;
      EXPECT_EQ(usage.of(MemoryCategory::workspace), gpt_activation_gradient_bytes(config, 2, 16))
          << name;
      EXPECT_EQ(static_cast<std::int64_t>(model.parameters_flat().size()), N);
    }
    EXPECT_EQ(tracker.usage().total_current, 0) << name;
  }
}

TEST(GptInit, StatisticsAndDeterminism) {
  const GptConfig config = gpt_config_by_name("gpt-tiny");
  MemoryTracker tracker;
  GptModel a(config, 1, 8, Backend::reference, tracker);
  GptModel b(config, 1, 8, Backend::reference, tracker);
  a.init_weights(42);

  const auto views = a.parameter_views();
  for (const auto& view : views) {
    const bool is_bias = view.name.back() == 'b';
    const bool is_layernorm_weight = view.name == "ln1w" || view.name == "ln2w" || view.name == "lnfw";
    if (is_bias) {
      EXPECT_TRUE(std::all_of(view.param, view.param + view.numel, [](float x) { return x == 0; }))
          << view.name;
    } else if (is_layernorm_weight) {
      EXPECT_TRUE(std::all_of(view.param, view.param + view.numel, [](float x) { return x == 1; }))
          << view.name;
    } else {
      double sum = 0, sum_sq = 0;
      for (std::int64_t i = 0; i < view.numel; ++i) {
        sum += view.param[i];
        sum_sq += static_cast<double>(view.param[i]) * view.param[i];
      }
      const double n = static_cast<double>(view.numel);
      const double mean = sum / n, std = std::sqrt(sum_sq / n - mean * mean);
      EXPECT_NEAR(mean, 0.0, 5 * 0.02 / std::sqrt(n)) << view.name;  // 5 standard errors
      EXPECT_NEAR(std, 0.02, 0.02 * 5 / std::sqrt(2 * n)) << view.name;
      EXPECT_TRUE(view.weight_decay) << view.name;
    }
  }

  const auto same = [](GptModel& x, GptModel& y) {
    return std::memcmp(x.parameters_flat().data(), y.parameters_flat().data(),
                       x.parameters_flat().size_bytes()) == 0;
  };
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  b.init_weights(42);
  omp_set_num_threads(threads);
  EXPECT_TRUE(same(a, b)) << "same seed, 1 thread vs " << threads;
  b.init_weights(43);
  EXPECT_FALSE(same(a, b)) << "different seeds";
}

class GptBackends : public ::testing::TestWithParam<Backend> {};

TEST_P(GptBackends, SmallerBatchThanAllocatedMatchesExactAllocation) {
  const GptConfig config = gpt_config_by_name("gpt-nano");
  const std::int64_t B = 2, T = 24;
  std::vector<std::int32_t> tokens(B * T), targets(B * T);
  const CounterRng rng(7, 0);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<std::int32_t>(rng.below(2 * i, 256));
    targets[i] = static_cast<std::int32_t>(rng.below(2 * i + 1, 256));
  }
  MemoryTracker tracker;
  GptModel large(config, 4, 64, GetParam(), tracker);
  GptModel exact(config, B, T, GetParam(), tracker);
  large.init_weights(11);
  exact.init_weights(11);
  // A larger forward first, so the small one runs over stale activations.
  std::vector<std::int32_t> big(4 * 64, 65);
  large.forward(big.data(), big.data(), 4, 64);

  const float loss_large = large.forward(tokens.data(), targets.data(), B, T);
  const float loss_exact = exact.forward(tokens.data(), targets.data(), B, T);
  EXPECT_EQ(loss_large, loss_exact);
  EXPECT_TRUE(std::equal(large.logits(), large.logits() + B * T * config.vocab, exact.logits()));
  large.zero_grad();
  exact.zero_grad();
  large.backward();
  exact.backward();
  EXPECT_TRUE(std::ranges::equal(large.gradients_flat(), exact.gradients_flat()));
  EXPECT_TRUE(std::isnan(exact.forward(tokens.data(), nullptr, B, T)));
  EXPECT_THROW(exact.backward(), Error);
}

INSTANTIATE_TEST_SUITE_P(Backends, GptBackends, ::testing::Values(Backend::reference, Backend::cpu),
                         kernels::BackendName{});

// Activation recomputation changes what is kept, not what is computed: the same loss and the
// same gradients as keeping everything, with two micro-batches in flight sharing the scratch
// (forward 0, forward 1, backward 0, backward 1: the 1F1B order of a first stage).
class GptRecompute : public ::testing::TestWithParam<Backend> {};

TEST_P(GptRecompute, SelectiveAndFullGiveTheGradientsOfNone) {
  const GptConfig config = gpt_config_by_name("gpt-nano");
  const std::int64_t B = 2, T = 24;
  std::vector<std::int32_t> tokens(2 * B * T), targets(2 * B * T);
  const CounterRng rng(5, 0);
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<std::int32_t>(rng.below(2 * i, 256));
    targets[i] = static_cast<std::int32_t>(rng.below(2 * i + 1, 256));
  }
  struct Result {
    std::vector<float> losses, gradients;
  };
  const auto train = [&](Recompute recompute) {
    MemoryTracker tracker;
    GptPartition partition;
    partition.activation_slots = 2;
    partition.recompute = recompute;
    GptModel model(config, B, T, GetParam(), tracker, partition);
    model.init_weights(3);
    model.zero_grad();
    Result r;
    for (std::int64_t slot : {0, 1})
      r.losses.push_back(model.forward_stage(slot, tokens.data() + slot * B * T, nullptr,
                                             targets.data() + slot * B * T, B, T));
    for (std::int64_t slot : {0, 1}) model.backward_stage(slot, nullptr);
    r.gradients.assign(model.gradients_flat().begin(), model.gradients_flat().end());
    return r;
  };
  const Result none = train(Recompute::none);
  for (Recompute mode : {Recompute::selective, Recompute::full}) {
    const Result r = train(mode);
    EXPECT_EQ(r.losses, none.losses) << static_cast<int>(mode);
    // the recomputed forward is the same kernel calls on the same inputs: bitwise the same
    ASSERT_EQ(r.gradients.size(), none.gradients.size());
    double largest = 0;
    for (std::size_t i = 0; i < r.gradients.size(); ++i)
      largest = std::max(largest, static_cast<double>(std::fabs(r.gradients[i] - none.gradients[i])));
    EXPECT_EQ(largest, 0.0) << static_cast<int>(mode);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, GptRecompute, ::testing::Values(Backend::reference, Backend::cpu),
                         kernels::BackendName{});

// Tracked activations: slots x the slot's tensors and inputs, plus the scratch once; selective
// drops the L (B, NH, T, T) probabilities for one, full everything but the block outputs.
TEST(GptMemory, RecomputeScratchIsHeldOnceAndSavesActivations) {
  const GptConfig config = gpt_config_by_name("gpt-tiny");
  const std::int64_t B = 2, T = 32, slots = 3;
  const std::int64_t inputs = 2 * B * T * 4;  // int32 tokens, targets
  std::vector<std::int64_t> held;
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full}) {
    MemoryTracker tracker;
    GptPartition partition;
    partition.activation_slots = slots;
    partition.recompute = mode;
    GptModel model(config, B, T, Backend::reference, tracker, partition);
    const GptShard shard = model.shard();
    const std::int64_t slot = gpt_shard_activation_bytes(shard, B, T).total + inputs;
    const std::int64_t scratch = gpt_shard_recompute_scratch_bytes(shard, B, T).total;
    EXPECT_EQ(model.slot_activation_bytes(), slot);
    EXPECT_EQ(model.recompute_scratch_bytes(), scratch);
    EXPECT_EQ(tracker.usage().of(MemoryCategory::activations), slots * slot + scratch);
    EXPECT_EQ(gpt_activation_bytes(config, B, T, mode) + inputs, slot);
    held.push_back(tracker.usage().of(MemoryCategory::activations));
  }
  const std::int64_t L = config.layers, C = config.channels, NH = config.heads, BT = B * T, f = 4;
  const std::int64_t att = B * NH * T * T * f;
  EXPECT_EQ(gpt_activation_bytes(config, B, T, Recompute::none) -
                gpt_activation_bytes(config, B, T, Recompute::selective), L * att);
  // full keeps per layer only the block output (B, T, C)
  const std::int64_t per_block_none = (gpt_activation_bytes(config, B, T) -
                                       gpt_activation_bytes(config, B, T, Recompute::full)) / L + BT * C * f;
  GptShard whole = resolve_gpt_partition(config, {});
  whole.recompute = Recompute::full;
  EXPECT_EQ(gpt_shard_recompute_scratch_bytes(whole, B, T).total, per_block_none - BT * C * f);
  EXPECT_GT(held[0], held[1]);
  EXPECT_GT(held[1], held[2]);
}

TEST(AdamW, ClipsByGlobalNormLikeTorch) {
  MemoryTracker tracker;
  std::vector<float> param{1.0f, 2.0f}, grad_a{3.0f}, grad_b{4.0f};
  std::vector<optim::ParameterSlice> slices{{"a", &param[0], grad_a.data(), 1, true},
                                            {"b", &param[1], grad_b.data(), 1, false}};
  optim::AdamWConfig config;
  config.grad_clip = 1.0;
  optim::AdamW optimizer(slices, config, Backend::reference, tracker);
  EXPECT_EQ(tracker.usage().of(MemoryCategory::optimizer), 2 * 2 * 4);
  EXPECT_DOUBLE_EQ(optimizer.clip_and_step(0.0), 5.0);
  EXPECT_FLOAT_EQ(grad_a[0], static_cast<float>(3.0 / (5.0 + 1e-6)));
  EXPECT_FLOAT_EQ(grad_b[0], static_cast<float>(4.0 / (5.0 + 1e-6)));
  EXPECT_EQ(param, (std::vector<float>{1.0f, 2.0f}));  // lr 0
  EXPECT_EQ(optimizer.step_count(), 1);

  // One step with lr 0.1: |update| = lr·|m̂/(sqrt(v̂)+eps)| ≈ lr, plus decay on slice a only.
  grad_a[0] = 0.3f;
  grad_b[0] = 0.4f;  // norm 0.5 < clip: untouched
  config.grad_clip = 0.0;
  optim::AdamW fresh(slices, config, Backend::reference, tracker);
  EXPECT_NEAR(fresh.clip_and_step(0.1), 0.5, 1e-7);
  EXPECT_FLOAT_EQ(grad_a[0], 0.3f);
  EXPECT_NEAR(param[0], 1.0 * (1 - 0.1 * 0.1) - 0.1, 1e-6);
  EXPECT_NEAR(param[1], 2.0 - 0.1, 1e-6);
}

TEST(GradientClipping, ReplicasCountOnceInAReducedNorm) {
  std::vector<float> param{1.0f, 2.0f}, grad_a{3.0f}, grad_b{4.0f};
  std::vector<optim::ParameterSlice> slices{{"a", &param[0], grad_a.data(), 1, true},
                                            {"b", &param[1], grad_b.data(), 1, false, true}};
  const auto& k = kernels::kernels_for(Backend::reference);
  // alone: every slice counts
  EXPECT_DOUBLE_EQ(optim::clip_gradients_by_global_norm(slices, 0.0, k, "test", 1), 5.0);
  // with a reducer standing for a second rank that holds b too (and counts it): 9 + 16
  const auto other_rank = [](double squared) { return squared + 16.0; };
  EXPECT_DOUBLE_EQ(optim::clip_gradients_by_global_norm(slices, 0.0, k, "test", 1, other_rank), 5.0);
  // clipping scales the replica as well
  optim::clip_gradients_by_global_norm(slices, 1.0, k, "test", 1, other_rank);
  EXPECT_FLOAT_EQ(grad_b[0], static_cast<float>(4.0 / (5.0 + 1e-6)));
}

}  // namespace
}  // namespace sb::gpt
