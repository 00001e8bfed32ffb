// SPDX-License-Identifier: Apache-2.0
// Mixed precision below the trainer: the dynamic loss scaler's rules, the optimizer's skipped
// step (parameters, moments and step count untouched), and the GPT with bf16/fp16 storage
// against the same GPT in fp32: loss, fp32 main gradients, tracked bytes, a few AdamW steps, and
// loss scaling's exact power-of-two factor. The whole run through `scalebench train` is tested in
// tests/cli; accuracy on real text in tests/cli.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <limits>
#include <vector>

#include "core/memory.hpp"
#include "core/rng.hpp"
#include "models/gpt/gpt.hpp"
#include "models/resnet/resnet.hpp"
#include "optim/adamw.hpp"
#include "optim/gradient_clipping.hpp"
#include "optim/loss_scaler.hpp"
#include "optim/sgd.hpp"
#include "optim/storage_gradients.hpp"
#include "tests/models/backend_param.hpp"

namespace sb {
namespace {

using kernels::Backend;

TEST(LossScaler, BacksOffOnOverflowAndGrowsAfterTheInterval) {
  optim::LossScalerConfig config;
  config.initial_scale = 1024;
  config.growth_interval = 3;
  optim::LossScaler scaler(config);
  EXPECT_EQ(scaler.scale(), 1024);
  scaler.update(true);
  EXPECT_EQ(scaler.scale(), 512);
  EXPECT_EQ(scaler.skipped_steps(), 1);
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 512);  // two good steps of three
  scaler.update(true);              // an overflow restarts the count
  EXPECT_EQ(scaler.scale(), 256);
  for (int i = 0; i < 3; ++i) scaler.update(false);
  EXPECT_EQ(scaler.scale(), 512);
  EXPECT_EQ(scaler.skipped_steps(), 2);
}

TEST(LossScaler, StaticScaleSkipsButNeverChanges) {
  optim::LossScalerConfig config;
  config.initial_scale = 128;
  config.growth_interval = 1;
  config.dynamic = false;
  optim::LossScaler scaler(config);
  scaler.update(true);
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.scale(), 128);
  EXPECT_EQ(scaler.skipped_steps(), 1);
}

TEST(LossScaler, RejectsABadConfigWithTheKey) {
  optim::LossScalerConfig config;
  config.growth_interval = 0;
  EXPECT_THROW(optim::LossScaler{config}, UserError);
}

// An overflowed gradient under loss scaling: the optimizer returns the non-finite norm and leaves
// parameters, moments and its step count exactly as they were; the next finite step divides the
// scale out, so it equals the unscaled step.
TEST(MixedPrecisionOptimizer, OverflowSkipsTheStepAndScaledGradientsStepLikeUnscaled) {
  MemoryTracker tracker;
  std::vector<float> params = {0.5f, -1.0f, 2.0f}, grads = {0.25f, 0.5f, -0.125f};
  std::vector<float> params_ref = params, grads_ref = grads;
  optim::AdamWConfig config;
  config.grad_clip = 0.0;
  optim::AdamW scaled({{"w", params.data(), grads.data(), 3, true}}, config, Backend::reference, tracker);
  optim::AdamW plain({{"w", params_ref.data(), grads_ref.data(), 3, true}}, config, Backend::reference, tracker);

  const std::vector<float> before = params;
  grads[1] = std::numeric_limits<float>::infinity();
  const double norm = scaled.clip_and_step(1e-2, {.loss_scale = 1024, .skip_non_finite = true});
  EXPECT_FALSE(std::isfinite(norm));
  EXPECT_EQ(std::memcmp(params.data(), before.data(), 3 * sizeof(float)), 0);
  EXPECT_EQ(scaled.step_count(), 0);
  for (float m : scaled.first_moments()) EXPECT_EQ(m, 0.0f);
  for (float v : scaled.second_moments()) EXPECT_EQ(v, 0.0f);

  for (std::size_t i = 0; i < 3; ++i) grads[i] = grads_ref[i] * 1024;  // exact: a power of two
  const double scaled_norm = scaled.clip_and_step(1e-2, {.loss_scale = 1024, .skip_non_finite = true});
  const double plain_norm = plain.clip_and_step(1e-2);
  EXPECT_DOUBLE_EQ(scaled_norm, plain_norm);
  EXPECT_EQ(scaled.step_count(), 1);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_EQ(params[i], params_ref[i]) << i;
}

TEST(MixedPrecisionOptimizer, OverflowWithoutLossScalingIsAnError) {
  MemoryTracker tracker;
  std::vector<float> params = {1.0f}, grads = {std::numeric_limits<float>::quiet_NaN()};
  optim::AdamW adamw({{"w", params.data(), grads.data(), 1, true}}, optim::AdamWConfig{}, Backend::reference,
                     tracker);
  EXPECT_THROW(adamw.clip_and_step(1e-3), Error);
}

// 16-bit main gradients (precision.main_grads storage): AdamW and SGD read them widened a chunk
// at a time, with loss-scale division and clipping applied as they widen, and step as they do
// on the same values in fp32. Two slices, one 16-bit over several chunks and one fp32.
template <class F, class Optimizer, class Config>
void expect_sixteen_bit_gradients_step_as_fp32(F (*round)(float), optim::GradientStorage storage, Config config) {
  MemoryTracker tracker;
  const std::int64_t n = 2 * optim::kWideningChunk + 123, small = 5;
  const CounterRng rng(11, 1);
  std::vector<float> params(n + small), reference_params, wide(n + small), small_grads(small);
  std::vector<std::uint16_t> bits(n);
  for (std::int64_t i = 0; i < n + small; ++i) params[i] = static_cast<float>(rng.normal(i));
  reference_params = params;
  // step s's gradients (loss scale 8): 16-bit ones, and the fp32 run gets exactly their values
  const auto fill = [&](std::int64_t s) {
    for (std::int64_t i = 0; i < n + small; ++i) {
      const float g = 8 * static_cast<float>(rng.normal((s + 1) * (n + small) + i));
      if (i < n) bits[i] = round(g).bits;
      wide[i] = i < n ? to_float(round(g)) : g;
      if (i >= n) small_grads[i - n] = g;
    }
  };
  optim::ParameterSlice sixteen{"w16", params.data(), nullptr, n, true};
  sixteen.grad_bits = bits.data();
  sixteen.grad_storage = storage;
  Optimizer mixed({sixteen, {"b", params.data() + n, small_grads.data(), small, false}}, config, Backend::cpu, tracker);
  EXPECT_EQ(tracker.usage().of(MemoryCategory::workspace),
            optim::kWideningChunk * static_cast<std::int64_t>(sizeof(float)));  // one chunk widened at a time
  Optimizer plain({{"w", reference_params.data(), wide.data(), n, true},
                   {"b", reference_params.data() + n, wide.data() + n, small, false}},
                  config, Backend::cpu, tracker);
  for (std::int64_t step = 0; step < 2; ++step) {  // the second reads the moments the first wrote
    fill(step);
    const std::vector<std::uint16_t> before = bits;
    const double norm = mixed.clip_and_step(1e-2, {.loss_scale = 8});
    const double expected = plain.clip_and_step(1e-2, {.loss_scale = 8});
    EXPECT_NEAR(norm, expected, 1e-6 * expected) << "step " << step;
    EXPECT_EQ(bits, before) << "the optimizer wrote the 16-bit gradients";
  }
  std::int64_t far = 0;
  for (std::int64_t i = 0; i < n + small; ++i)
    far += std::abs(params[i] - reference_params[i]) > 1e-6f * (1.0f + std::abs(reference_params[i]));
  EXPECT_EQ(far, 0) << "parameters off the fp32 optimizer's";
}

TEST(MixedPrecisionOptimizer, SixteenBitMainGradientsStepAsTheirFp32Values) {
  optim::AdamWConfig adam;
  adam.grad_clip = 0.5;  // clipped: the coefficient is the loss scale's and the clip's
  expect_sixteen_bit_gradients_step_as_fp32<bf16, optim::AdamW>(&to_bf16, optim::GradientStorage::bf16, adam);
  expect_sixteen_bit_gradients_step_as_fp32<fp16, optim::AdamW>(&to_fp16, optim::GradientStorage::fp16, adam);
  optim::SgdConfig sgd;
  sgd.grad_clip = 0.5;
  expect_sixteen_bit_gradients_step_as_fp32<bf16, optim::Sgd>(&to_bf16, optim::GradientStorage::bf16, sgd);
  expect_sixteen_bit_gradients_step_as_fp32<fp16, optim::Sgd>(&to_fp16, optim::GradientStorage::fp16, sgd);
}

// ---- the GPT with 16-bit storage against fp32 --------------------------------------------

constexpr std::int64_t kB = 4, kT = 32;

std::vector<std::int32_t> random_tokens(std::uint64_t stream, std::int64_t n, std::int64_t vocab) {
  const CounterRng rng(7, stream);
  std::vector<std::int32_t> tokens(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    tokens[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(rng.uniform(static_cast<std::uint64_t>(i)) * vocab);
  return tokens;
}

double relative_l2_error(std::span<const float> got, std::span<const float> want) {
  double diff = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    diff += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
    norm += static_cast<double>(want[i]) * want[i];
  }
  return std::sqrt(diff / norm);
}

struct Precision16 {
  const char* name;
  double loss_tolerance;      // |loss - fp32 loss| of one forward from the same weights
  double gradient_tolerance;  // relative L2 error of the fp32 main gradients
};

template <class S>
void expect_close_to_fp32(const Precision16& p) {
  const gpt::GptConfig config = gpt::gpt_config_by_name("gpt-nano");
  MemoryTracker tracker32, tracker16;
  gpt::GptModel fp32(config, kB, kT, Backend::cpu, tracker32);
  gpt::GptModelT<S> mixed(config, kB, kT, Backend::cpu, tracker16);
  fp32.init_weights(3);
  mixed.init_weights(3);
  const auto tokens = random_tokens(1, kB * kT, config.vocab);
  const auto targets = random_tokens(2, kB * kT, config.vocab);

  // the master weights are the fp32 model's weights, bit for bit
  ASSERT_EQ(fp32.parameters_flat().size(), mixed.parameters_flat().size());
  EXPECT_EQ(std::memcmp(fp32.parameters_flat().data(), mixed.parameters_flat().data(),
                        fp32.parameters_flat().size() * sizeof(float)),
            0);
  const float loss32 = fp32.forward(tokens.data(), targets.data(), kB, kT);
  const float loss16 = mixed.forward(tokens.data(), targets.data(), kB, kT);
  EXPECT_NEAR(loss16, loss32, p.loss_tolerance) << p.name;
  EXPECT_GT(std::abs(loss16 - loss32), 0.0f) << p.name << ": 16-bit storage must round something";
  fp32.zero_grad();
  mixed.zero_grad();
  fp32.backward();
  mixed.backward();
  const double error = relative_l2_error(mixed.gradients_flat(), fp32.gradients_flat());
  EXPECT_LT(error, p.gradient_tolerance) << p.name;
  std::printf("%s: loss %.6f vs fp32 %.6f, main-gradient relative L2 error %.2e\n", p.name, loss16, loss32, error);

  // tracked memory: activations and activation gradients in half the bytes (statistics, tokens
  // and targets stay 4-byte); 16-bit weights plus fp32 master weights
  const MemoryUsage& u32 = tracker32.usage();
  const MemoryUsage& u16 = tracker16.usage();
  const double activations = static_cast<double>(u16.of(MemoryCategory::activations)) /
                             static_cast<double>(u32.of(MemoryCategory::activations));
  const double activation_grads = static_cast<double>(gpt::gpt_activation_gradient_bytes<S>(config, kB, kT)) /
                                  static_cast<double>(gpt::gpt_activation_gradient_bytes(config, kB, kT));
  EXPECT_GE(activations, 0.5);
  EXPECT_LE(activations, 0.5 * 1.05);
  EXPECT_GE(activation_grads, 0.5);
  EXPECT_LE(activation_grads, 0.5 * 1.05);
  const std::int64_t N = gpt::gpt_parameter_count(config);
  EXPECT_EQ(u16.of(MemoryCategory::params), 2 * N);
  EXPECT_EQ(u16.of(MemoryCategory::grads), 4 * N);
  EXPECT_EQ(u16.of(MemoryCategory::optimizer), 4 * N);  // master weights (AdamW adds 8N)
  std::printf("%s: tracked activations %.4f of fp32's, activation gradients %.4f\n", p.name, activations,
              activation_grads);
}

TEST(MixedPrecisionGpt, Bf16CloseToFp32WithHalfTheActivationBytes) {
  expect_close_to_fp32<bf16>({"bf16", 0.02, 0.05});
}

TEST(MixedPrecisionGpt, Fp16CloseToFp32WithHalfTheActivationBytes) {
  expect_close_to_fp32<fp16>({"fp16", 0.005, 0.01});
}

// 20 AdamW steps on a fixed batch: the 16-bit runs follow fp32's losses; after each step the
// 16-bit weights are the master weights rounded (sync_storage_parameters).
template <class S>
void expect_training_follows_fp32(const char* name, double tolerance) {
  const gpt::GptConfig config = gpt::gpt_config_by_name("gpt-nano");
  MemoryTracker tracker;
  gpt::GptModel fp32(config, kB, kT, Backend::cpu, tracker);
  gpt::GptModelT<S> mixed(config, kB, kT, Backend::cpu, tracker);
  fp32.init_weights(5);
  mixed.init_weights(5);
  optim::AdamWConfig adam;
  adam.lr = 3e-3;
  optim::AdamW opt32(fp32.parameter_slices(), adam, Backend::cpu, tracker);
  optim::AdamW opt16(mixed.parameter_slices(), adam, Backend::cpu, tracker);
  const auto tokens = random_tokens(3, kB * kT, config.vocab);
  const auto targets = random_tokens(4, kB * kT, config.vocab);
  float first = 0, last32 = 0, last16 = 0;
  for (int step = 0; step < 20; ++step) {
    last32 = fp32.forward(tokens.data(), targets.data(), kB, kT);
    last16 = mixed.forward(tokens.data(), targets.data(), kB, kT);
    if (step == 0) first = last32;
    EXPECT_NEAR(last16, last32, tolerance) << name << " step " << step;
    fp32.zero_grad();
    mixed.zero_grad();
    fp32.backward();
    mixed.backward();
    opt32.clip_and_step(adam.lr);
    opt16.clip_and_step(adam.lr);
    mixed.sync_storage_parameters();
  }
  EXPECT_LT(last32, first - 0.5) << "the batch is learned";
  std::printf("%s: loss after 20 steps %.4f vs fp32 %.4f (start %.4f)\n", name, last16, last32, first);
}

TEST(MixedPrecisionGpt, Bf16TrainingFollowsFp32) { expect_training_follows_fp32<bf16>("bf16", 0.05); }
TEST(MixedPrecisionGpt, Fp16TrainingFollowsFp32) { expect_training_follows_fp32<fp16>("fp16", 0.02); }

// Backward from loss·2^k: in fp32 every gradient is exactly 2^k times the unscaled one; in fp16
// the scaled gradients, divided by the scale, are the unscaled ones within fp16 rounding.
TEST(MixedPrecisionGpt, LossScaleMultipliesTheGradients) {
  const gpt::GptConfig config = gpt::gpt_config_by_name("gpt-nano");
  MemoryTracker tracker;
  gpt::GptModel fp32(config, kB, kT, Backend::cpu, tracker);
  gpt::GptModelT<fp16> half(config, kB, kT, Backend::cpu, tracker);
  fp32.init_weights(9);
  half.init_weights(9);
  const auto tokens = random_tokens(5, kB * kT, config.vocab);
  const auto targets = random_tokens(6, kB * kT, config.vocab);
  const auto gradients = [&](auto& model, double scale) {
    model.set_loss_scale(scale);
    model.forward(tokens.data(), targets.data(), kB, kT);
    model.zero_grad();
    model.backward();
    std::vector<float> g(model.gradients_flat().begin(), model.gradients_flat().end());
    if (scale != 1.0)
      for (float& x : g) x = static_cast<float>(x / scale);
    return g;
  };
  const std::vector<float> plain = gradients(fp32, 1.0), scaled = gradients(fp32, 4096.0);
  EXPECT_EQ(std::memcmp(plain.data(), scaled.data(), plain.size() * sizeof(float)), 0);
  const std::vector<float> half_scaled = gradients(half, 4096.0);
  EXPECT_LT(relative_l2_error(half_scaled, plain), 0.01);
}

// ---- resnet-mini with 16-bit storage against fp32 ----------------------------------------

// Cosine of the angle between two gradients: the direction SGD steps along.
double cosine(std::span<const float> a, std::span<const float> b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// BatchNorm's backward subtracts the mean of dy and its projection on the normalised input: at
// initialisation, with random labels, most of dy cancels, so the 16-bit rounding of dy and of the
// saved input grows block by block towards the stem (bf16: a few per cent at the last block, a
// quarter at the stem; SB_PRINT_TENSOR_ERRORS=1 prints each tensor's). What SGD needs is the
// direction: the cosine to fp32's gradient is held to min_cosine; the relative L2 error is printed.
template <class S>
void expect_resnet_close_to_fp32(const char* name, double loss_tolerance, double min_cosine) {
  const resnet::ResnetConfig config = resnet::resnet_config_by_name("resnet-mini");
  constexpr std::int64_t N = 16;
  MemoryTracker tracker32, tracker16;
  resnet::ResnetModel fp32(config, N, Backend::cpu, tracker32);
  resnet::ResnetModelT<S> mixed(config, N, Backend::cpu, tracker16);
  fp32.init_weights(4);
  mixed.init_weights(4);
  const std::int64_t pixels = config.image_channels * config.image_size * config.image_size;
  const CounterRng rng(11, 0);
  std::vector<float> images(static_cast<std::size_t>(N * pixels));
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(rng.normal(i));
  const auto labels = random_tokens(8, N, config.classes);
  const float loss32 = fp32.forward(images.data(), labels.data(), N, true);
  const float loss16 = mixed.forward(images.data(), labels.data(), N, true);
  EXPECT_NEAR(loss16, loss32, loss_tolerance) << name;
  fp32.zero_grad();
  mixed.zero_grad();
  fp32.backward();
  mixed.backward();
  const double error = relative_l2_error(mixed.gradients_flat(), fp32.gradients_flat());
  const double direction = cosine(mixed.gradients_flat(), fp32.gradients_flat());
  EXPECT_GE(direction, min_cosine) << name;
  if (std::getenv("SB_PRINT_TENSOR_ERRORS")) {
    const auto views32 = fp32.parameter_views();
    const auto views16 = mixed.parameter_views();
    for (std::size_t v = 0; v < views32.size(); ++v) {
      const std::span<const float> g32(views32[v].grad, static_cast<std::size_t>(views32[v].numel));
      const std::span<const float> g16(views16[v].grad, static_cast<std::size_t>(views16[v].numel));
      double norm = 0;
      for (float x : g32) norm += static_cast<double>(x) * x;
      std::printf("  %-28s norm %.3e relative error %.2e\n", views32[v].name.c_str(), std::sqrt(norm),
                  relative_l2_error(g16, g32));
    }
  }
  const double activations = static_cast<double>(tracker16.usage().of(MemoryCategory::activations)) /
                             static_cast<double>(tracker32.usage().of(MemoryCategory::activations));
  EXPECT_GE(activations, 0.5);
  EXPECT_LE(activations, 0.5 * 1.05);
  std::printf("resnet %s: loss %.6f vs fp32 %.6f, main gradient: cosine %.5f, relative L2 error %.2e; "
              "activations %.4f of fp32's\n", name, loss16, loss32, direction, error, activations);
}

TEST(MixedPrecisionResnet, Bf16CloseToFp32WithHalfTheActivationBytes) {
  expect_resnet_close_to_fp32<bf16>("bf16", 0.03, 0.98);
}

TEST(MixedPrecisionResnet, Fp16CloseToFp32WithHalfTheActivationBytes) {
  expect_resnet_close_to_fp32<fp16>("fp16", 0.005, 0.995);
}

}  // namespace
}  // namespace sb
