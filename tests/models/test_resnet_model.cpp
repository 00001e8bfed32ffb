// SPDX-License-Identifier: Apache-2.0
// ResNet properties that need no golden file: configs, parameter counts, FLOPs, tracked bytes,
// initialisation, batch-shape independence, BatchNorm modes and SGD. Leaves out PyTorch parity.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_flops.hpp"
#include "optim/sgd.hpp"
#include "tests/models/backend_param.hpp"

namespace sb::resnet {
namespace {

using kernels::Backend;

TEST(ResnetConfig, NamedConfigsAndUnknownName) {
  EXPECT_EQ(resnet_config_names(),
            (std::vector<std::string>{"resnet-mini", "resnet-micro", "resnet-18", "resnet-50"}));
  const ResnetConfig mini = resnet_config_by_name("resnet-mini");
  EXPECT_EQ(mini.image_channels, 1);
  EXPECT_EQ(mini.image_size, 28);
  EXPECT_EQ(mini.classes, 10);
  EXPECT_EQ(mini.stage_channels, (std::vector<std::int64_t>{16, 32, 64}));
  EXPECT_FALSE(mini.spec_only);
  try {
    resnet_config_by_name("resnet-152");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "unknown model 'resnet-152' (known: resnet-mini, resnet-micro, resnet-18, resnet-50)");
  }
}

TEST(ResnetConfig, SpecOnlyConfigsCannotBeTrained) {
  MemoryTracker tracker;
  for (const char* name : {"resnet-18", "resnet-50"}) {
    try {
      ResnetModel model(resnet_config_by_name(name), 1, Backend::reference, tracker);
      FAIL() << "expected UserError for " << name;
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("spec only"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(tracker.usage().total_current, 0);
}

TEST(ResnetConfig, ValidationNamesTheField) {
  ResnetConfig config = resnet_config_by_name("resnet-mini");
  config.stage_blocks = {2, 2};
  try {
    validate_resnet_config(config);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("stage_blocks has 2 stages but stage_channels has 3"),
              std::string::npos)
        << e.what();
  }
  config = resnet_config_by_name("resnet-mini");
  config.classes = 0;
  EXPECT_THROW(validate_resnet_config(config), UserError);
}

TEST(ResnetConfig, ResnetMiniBlocks) {
  const auto blocks = resnet_blocks(resnet_config_by_name("resnet-mini"));
  ASSERT_EQ(blocks.size(), 6u);
  // name, IC, OC, stride, in size, out size, 1×1 conv shortcut
  const std::vector<std::tuple<std::string, int, int, int, int, int, bool>> expected{
      {"stage1.0", 16, 16, 1, 28, 28, false}, {"stage1.1", 16, 16, 1, 28, 28, false},
      {"stage2.0", 16, 32, 2, 28, 14, true},  {"stage2.1", 32, 32, 1, 14, 14, false},
      {"stage3.0", 32, 64, 2, 14, 7, true},   {"stage3.1", 64, 64, 1, 7, 7, false}};
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    const auto& [name, ic, oc, stride, in_size, out_size, shortcut] = expected[i];
    EXPECT_EQ(blocks[i].name, name);
    EXPECT_EQ(blocks[i].in_channels, ic) << name;
    EXPECT_EQ(blocks[i].out_channels, oc) << name;
    EXPECT_EQ(blocks[i].stride, stride) << name;
    EXPECT_EQ(blocks[i].in_size, in_size) << name;
    EXPECT_EQ(blocks[i].out_size, out_size) << name;
    EXPECT_EQ(blocks[i].shortcut_conv, shortcut) << name;
  }
}

TEST(ResnetConfig, ParameterCountsMatchTorchvisionAndShapes) {
  // torchvision's sum(p.numel()) for resnet18 and resnet50; resnet-mini from its layers:
  // stem 176, stage1 2·4672, stage2 14528 + 18560, stage3 57728 + 73984, fc 650.
  EXPECT_EQ(resnet_parameter_count(resnet_config_by_name("resnet-mini")), 174970);
  EXPECT_EQ(resnet_parameter_count(resnet_config_by_name("resnet-18")), 11689512);
  EXPECT_EQ(resnet_parameter_count(resnet_config_by_name("resnet-50")), 25557032);
  const ResnetConfig mini = resnet_config_by_name("resnet-mini");
  std::int64_t sum = 0;
  for (const auto& spec : resnet_parameter_specs(mini)) sum += spec.shape.numel();
  EXPECT_EQ(sum, resnet_parameter_count(mini));
  EXPECT_EQ(resnet_parameter_specs(mini).size(), 47u);
  // 16 + 4·16 + 5·32 + 5·64 BatchNorm channels (stem, two per block, two shortcuts)
  EXPECT_EQ(resnet_batchnorm_channels(mini), 16 + 4 * 16 + 5 * 32 + 5 * 64);
}

TEST(ResnetFlops, ConvolutionsAndHead) {
  // resnet-mini per image, 2·OC·OH·OW·C·K² per conv:
  const double stem = 2.0 * 16 * 28 * 28 * 1 * 9;
  const double stage1 = 4 * (2.0 * 16 * 28 * 28 * 16 * 9);
  const double stage2 = 2.0 * 32 * 14 * 14 * 16 * 9 + 3 * (2.0 * 32 * 14 * 14 * 32 * 9) +
                        2.0 * 32 * 14 * 14 * 16;  // 1×1 shortcut
  const double stage3 = 2.0 * 64 * 7 * 7 * 32 * 9 + 3 * (2.0 * 64 * 7 * 7 * 64 * 9) +
                        2.0 * 64 * 7 * 7 * 32;
  const double fc = 2.0 * 64 * 10;
  const ResnetConfig mini = resnet_config_by_name("resnet-mini");
  EXPECT_EQ(resnet_forward_flops(mini, 1), stem + stage1 + stage2 + stage3 + fc);
  EXPECT_EQ(resnet_forward_flops(mini, 1), 40367872.0);
  EXPECT_EQ(resnet_training_flops(mini, 128), 3.0 * 128 * 40367872.0);
  // torchvision's "GFLOPS" are multiply-adds: 1.81 G and 4.09 G (fvcore's exact counts).
  EXPECT_EQ(resnet_forward_flops(resnet_config_by_name("resnet-18"), 1), 2.0 * 1814073344);
  EXPECT_EQ(resnet_forward_flops(resnet_config_by_name("resnet-50"), 1), 2.0 * 4089184256);
}

TEST(ResnetMemory, TrackedBytesAreExact) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  const std::int64_t N = resnet_parameter_count(config), batch = 5;
  MemoryTracker tracker;
  {
    ResnetModel model(config, batch, Backend::reference, tracker);
    optim::Sgd optimizer(model.parameter_slices(), optim::SgdConfig{}, Backend::reference, tracker);
    const MemoryUsage& usage = tracker.usage();
    const std::int64_t statistics = 2 * 4 * resnet_batchnorm_channels(config);
    EXPECT_EQ(usage.of(MemoryCategory::params), 4 * N + statistics);
    EXPECT_EQ(usage.of(MemoryCategory::grads), 4 * N);
    EXPECT_EQ(usage.of(MemoryCategory::optimizer), 4 * N);
    EXPECT_EQ(usage.of(MemoryCategory::activations),
              resnet_activation_bytes(config, batch) + 4 * batch);  // + int32 labels
    EXPECT_EQ(usage.of(MemoryCategory::workspace),
              resnet_activation_gradient_bytes(config, batch));
    EXPECT_EQ(static_cast<std::int64_t>(model.parameters_flat().size()), N);
    EXPECT_EQ(static_cast<std::int64_t>(model.running_statistics_flat().size()),
              2 * resnet_batchnorm_channels(config));
  }
  EXPECT_EQ(tracker.usage().total_current, 0);

  // Per image: the input, stem conv and ReLU, per block conv1, relu1, conv2, out (+ the
  // shortcut conv), pooled, logits, probs, loss, and one scratch tensor of the largest
  // (16, 28, 28). The BatchNorm batch statistics (2 per channel) do not grow with N.
  const std::int64_t big = 16 * 28 * 28, mid = 32 * 14 * 14, small = 64 * 7 * 7;
  const std::int64_t per_image = 28 * 28 + 2 * big + 2 * 4 * big + (5 + 4) * mid +
                                 (5 + 4) * small + 64 + 10 + 10 + 1 + big;
  EXPECT_EQ(resnet_activation_bytes(config, 2) - resnet_activation_bytes(config, 1), 4 * per_image);
  EXPECT_EQ(resnet_activation_bytes(config, 1) - 4 * per_image,
            4 * 2 * resnet_batchnorm_channels(config));
  // the head's three gradients, then six block-sized scratch tensors
  EXPECT_EQ(resnet_activation_gradient_bytes(config, 3), 4 * 3 * (1 + 10 + 64 + 6 * big));
}

TEST(ResnetInit, StatisticsAndDeterminism) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  MemoryTracker tracker;
  ResnetModel a(config, 1, Backend::reference, tracker);
  ResnetModel b(config, 1, Backend::reference, tracker);
  a.init_weights(42);

  const auto specs = resnet_parameter_specs(config);
  const auto views = a.parameter_views();
  ASSERT_EQ(specs.size(), views.size());
  for (std::size_t k = 0; k < views.size(); ++k) {
    const ParameterView& view = views[k];
    const ParameterSpec& spec = specs[k];
    ASSERT_EQ(view.name, spec.name);
    const auto all_equal = [&](float value) {
      return std::all_of(view.param, view.param + view.numel, [&](float x) { return x == value; });
    };
    double sum = 0, sum_sq = 0, max_abs = 0;
    for (std::int64_t i = 0; i < view.numel; ++i) {
      sum += view.param[i];
      sum_sq += static_cast<double>(view.param[i]) * view.param[i];
      max_abs = std::max(max_abs, std::abs(static_cast<double>(view.param[i])));
    }
    const double n = static_cast<double>(view.numel);
    const double mean = sum / n, std = std::sqrt(sum_sq / n - mean * mean);
    switch (spec.init) {
      case ParameterInit::ones: EXPECT_TRUE(all_equal(1.0f)) << view.name; break;
      case ParameterInit::zeros: EXPECT_TRUE(all_equal(0.0f)) << view.name; break;
      case ParameterInit::kaiming_normal_fan_out: {
        const Shape& s = spec.shape;  // (OC, IC, K, K)
        const double expected = std::sqrt(2.0 / static_cast<double>(s[0] * s[2] * s[3]));
        EXPECT_DOUBLE_EQ(spec.scale, expected) << view.name;
        EXPECT_NEAR(mean, 0.0, 5 * expected / std::sqrt(n)) << view.name;  // 5 standard errors
        EXPECT_NEAR(std, expected, 5 * expected / std::sqrt(2 * n)) << view.name;
        break;
      }
      case ParameterInit::linear_uniform: {
        const double bound = 1.0 / 8.0;  // 1/sqrt(fan_in = 64)
        EXPECT_DOUBLE_EQ(spec.scale, bound) << view.name;
        EXPECT_LE(max_abs, bound) << view.name;
        if (view.numel > 100) EXPECT_NEAR(std, bound / std::sqrt(3.0), 0.1 * bound) << view.name;
        break;
      }
    }
  }
  for (const auto& view : a.statistics_views()) {
    const float expected = view.name.ends_with("running_var") ? 1.0f : 0.0f;
    EXPECT_TRUE(std::all_of(view.values, view.values + view.numel,
                            [&](float x) { return x == expected; }))
        << view.name;
  }

  const auto same = [](ResnetModel& x, ResnetModel& y) {
    return std::ranges::equal(x.parameters_flat(), y.parameters_flat());
  };
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  b.init_weights(42);
  omp_set_num_threads(threads);
  EXPECT_TRUE(same(a, b)) << "same seed, 1 thread vs " << threads;
  b.init_weights(43);
  EXPECT_FALSE(same(a, b)) << "different seeds";
}

// N images of standard normal pixels and labels below 10, from a fixed stream.
void random_batch(std::int64_t N, std::vector<float>& images, std::vector<std::int32_t>& labels) {
  const CounterRng rng(7, 0);
  images.resize(static_cast<std::size_t>(N * 28 * 28));
  labels.resize(static_cast<std::size_t>(N));
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(rng.normal(i));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    labels[i] = static_cast<std::int32_t>(rng.below(images.size() + i, 10));
  }
}

class ResnetBackends : public ::testing::TestWithParam<Backend> {};

TEST_P(ResnetBackends, SmallerBatchThanAllocatedMatchesExactAllocation) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  const std::int64_t N = 3;
  std::vector<float> images, big_images;
  std::vector<std::int32_t> labels, big_labels;
  random_batch(N, images, labels);
  random_batch(6, big_images, big_labels);
  std::reverse(big_images.begin(), big_images.end());
  MemoryTracker tracker;
  ResnetModel large(config, 6, GetParam(), tracker);
  ResnetModel exact(config, N, GetParam(), tracker);
  large.init_weights(11);
  exact.init_weights(11);
  // A larger eval forward first, so the small one runs over stale activations.
  large.forward(big_images.data(), big_labels.data(), 6, /*training=*/false);

  const float loss_large = large.forward(images.data(), labels.data(), N, true);
  const float loss_exact = exact.forward(images.data(), labels.data(), N, true);
  EXPECT_TRUE(std::isfinite(loss_exact));
  EXPECT_EQ(loss_large, loss_exact);
  EXPECT_TRUE(std::equal(large.logits(), large.logits() + N * config.classes, exact.logits()));
  EXPECT_TRUE(std::ranges::equal(large.running_statistics_flat(), exact.running_statistics_flat()));
  large.zero_grad();
  exact.zero_grad();
  large.backward();
  exact.backward();
  EXPECT_TRUE(std::ranges::equal(large.gradients_flat(), exact.gradients_flat()));
  EXPECT_TRUE(std::ranges::any_of(exact.gradients_flat(), [](float g) { return g != 0; }));
}

TEST_P(ResnetBackends, BatchNormModesAndBackwardPreconditions) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  const std::int64_t N = 2;
  std::vector<float> images;
  std::vector<std::int32_t> labels;
  random_batch(N, images, labels);
  MemoryTracker tracker;
  ResnetModel model(config, N, GetParam(), tracker);
  model.init_weights(5);
  const auto statistics = [&] {
    return std::vector<float>(model.running_statistics_flat().begin(),
                              model.running_statistics_flat().end());
  };
  const std::vector<float> initial = statistics();

  // eval: running statistics read, not written; no backward
  const float eval_loss = model.forward(images.data(), labels.data(), N, /*training=*/false);
  EXPECT_TRUE(std::isfinite(eval_loss));
  EXPECT_EQ(statistics(), initial);
  EXPECT_THROW(model.backward(), Error);
  // training without labels: logits and running statistics, no loss, no backward
  EXPECT_TRUE(std::isnan(model.forward(images.data(), nullptr, N, /*training=*/true)));
  EXPECT_NE(statistics(), initial);
  EXPECT_THROW(model.backward(), Error);
  // training with labels: backward allowed
  EXPECT_TRUE(std::isfinite(model.forward(images.data(), labels.data(), N, true)));
  model.zero_grad();
  EXPECT_NO_THROW(model.backward());
  std::vector<std::int32_t> bad_labels{0, 10};
  EXPECT_THROW(model.forward(images.data(), bad_labels.data(), N, true), Error);
  EXPECT_THROW(model.forward(images.data(), labels.data(), N + 1, true), Error);
}

// Full recomputation: each block's forward again before its backward, from the block's input and
// the batch statistics its forward kept, gives the same logits, running statistics and gradients
// as keeping everything, bit for bit, also with two slots in flight and after a smaller batch
// in between (the scratch then holds another batch's tensors); it keeps each block's output and
// one block's recomputed tensors.
TEST_P(ResnetBackends, FullRecomputationGivesTheSameGradientsBitForBit) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  const std::int64_t N = 3;
  std::vector<float> images, other;
  std::vector<std::int32_t> labels, other_labels;
  random_batch(N, images, labels);
  random_batch(2, other, other_labels);
  MemoryTracker kept_tracker, recomputed_tracker;
  ResnetModel kept(config, N, GetParam(), kept_tracker, {}, 2);
  ResnetModel recomputed(config, N, GetParam(), recomputed_tracker, {}, 2, nullptr, Residency::allocated,
                         Recompute::full);
  kept.init_weights(13);
  recomputed.init_weights(13);
  for (ResnetModel* m : {&kept, &recomputed}) {
    m->zero_grad();
    m->forward(0, images.data(), labels.data(), N, true);
    m->forward(1, other.data(), other_labels.data(), 2, true);
    m->backward(1, nullptr);
    m->backward(0, nullptr);
  }
  EXPECT_TRUE(std::ranges::equal(kept.running_statistics_flat(), recomputed.running_statistics_flat()));
  EXPECT_TRUE(std::ranges::equal(kept.gradients_flat(), recomputed.gradients_flat()));
  EXPECT_TRUE(std::ranges::any_of(recomputed.gradients_flat(), [](float g) { return g != 0; }));

  const auto activations = [](const MemoryTracker& t) { return t.usage().of(MemoryCategory::activations); };
  EXPECT_EQ(activations(recomputed_tracker),
            resnet_activation_bytes(config, N, {}, 2, Recompute::full) + 4 * 2 * N);  // + int32 labels
  // per image and slot a block keeps its output only; the scratch holds the largest block's conv1,
  // relu1 and conv2 (16, 28, 28) once
  const std::int64_t big = 16 * 28 * 28, mid = 32 * 14 * 14, small = 64 * 7 * 7;
  const std::int64_t dropped = 2 * 3 * big + (3 + 4) * mid + (3 + 4) * small;  // stages 2 and 3: one shortcut conv
  EXPECT_EQ(resnet_activation_bytes(config, N, {}, 2) - resnet_activation_bytes(config, N, {}, 2, Recompute::full),
            4 * N * (2 * dropped - 3 * big));
  EXPECT_THROW(ResnetModel(config, N, GetParam(), recomputed_tracker, {}, 1, nullptr, Residency::allocated,
                           Recompute::selective),
               UserError);
}

INSTANTIATE_TEST_SUITE_P(Backends, ResnetBackends,
                         ::testing::Values(Backend::reference, Backend::cpu),
                         kernels::BackendName{});

TEST(Sgd, MomentumAndWeightDecayLikeTorch) {
  MemoryTracker tracker;
  std::vector<float> param{1.0f, 2.0f}, grad_a{0.5f}, grad_b{-1.0f};
  std::vector<optim::ParameterSlice> slices{{"a", &param[0], grad_a.data(), 1, true},
                                            {"b", &param[1], grad_b.data(), 1, false}};
  optim::SgdConfig config;  // lr 0.1, momentum 0.9, weight decay 5e-4, no clipping
  config.weight_decay = 0.1;
  optim::Sgd optimizer(slices, config, Backend::reference, tracker);
  EXPECT_EQ(tracker.usage().of(MemoryCategory::optimizer), 2 * 4);

  // step 1: buf = g + wd·p (decay on slice a only); p -= lr·buf
  EXPECT_DOUBLE_EQ(optimizer.clip_and_step(0.1), std::sqrt(0.5 * 0.5 + 1.0));
  const double buf_a = 0.5 + 0.1 * 1.0, buf_b = -1.0;
  const double p_a = 1.0 - 0.1 * buf_a, p_b = 2.0 - 0.1 * buf_b;
  EXPECT_NEAR(param[0], p_a, 1e-6);
  EXPECT_NEAR(param[1], p_b, 1e-6);
  // step 2, same gradients: buf = 0.9·buf + g + wd·p
  const double buf_a2 = 0.9 * buf_a + 0.5 + 0.1 * p_a, buf_b2 = 0.9 * buf_b - 1.0;
  optimizer.clip_and_step(0.1);
  EXPECT_NEAR(param[0], p_a - 0.1 * buf_a2, 1e-6);
  EXPECT_NEAR(param[1], p_b - 0.1 * buf_b2, 1e-6);
  EXPECT_NEAR(optimizer.momentum_buffers()[0], buf_a2, 1e-6);
  EXPECT_EQ(optimizer.step_count(), 2);

  // clipping: norm 5 scaled to 1 by max_norm / (norm + 1e-6), as clip_grad_norm_
  std::vector<float> q{0.0f, 0.0f}, g{3.0f, 4.0f};
  config.grad_clip = 1.0;
  optim::Sgd clipping({{"q", q.data(), g.data(), 2, false}}, config, Backend::reference, tracker);
  EXPECT_DOUBLE_EQ(clipping.clip_and_step(0.0), 5.0);
  EXPECT_FLOAT_EQ(g[0], static_cast<float>(3.0 / (5.0 + 1e-6)));
  EXPECT_FLOAT_EQ(g[1], static_cast<float>(4.0 / (5.0 + 1e-6)));
  EXPECT_EQ(q, (std::vector<float>{0.0f, 0.0f}));  // lr 0
}

}  // namespace
}  // namespace sb::resnet
