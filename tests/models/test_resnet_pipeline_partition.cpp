// SPDX-License-Identifier: Apache-2.0
// ResNet split into pipeline stages, in one process: the units and their FLOPs, the balanced
// split and the checked hand split, tracked memory per partition and slot, and stages chained
// by hand (2 and 3 stages, 2 activation slots, 2 micro-batches forwarded before either
// backward) matching the unsplit model that accumulates the same micro-batches: loss, every
// gradient and every running statistic. The arithmetic of each layer is the same either way,
// so the documented tolerance (1e-6 of the tensor's largest value) is only a guard against
// reordered sums; the test prints the largest difference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "models/resnet/resnet.hpp"
#include "models/resnet/resnet_flops.hpp"
#include "models/resnet/resnet_partition.hpp"
#include "tests/models/backend_param.hpp"

namespace sb::resnet {
namespace {

using kernels::Backend;

TEST(ResnetPartition, UnitsOfResnetMini) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  const auto units = resnet_pipeline_units(config);
  std::vector<std::string> names;
  double flops = 0;
  for (const auto& u : units) names.push_back(u.name), flops += u.forward_flops_per_image;
  EXPECT_EQ(names, (std::vector<std::string>{"stem", "stage1.0", "stage1.1", "stage2.0", "stage2.1",
                                             "stage3.0", "stage3.1", "head"}));
  EXPECT_EQ(flops, resnet_forward_flops(config, 1));
  EXPECT_EQ(units.front().in_floats, 28 * 28);
  EXPECT_EQ(units.front().out_floats, 16 * 28 * 28);
  EXPECT_EQ(units[3].out_floats, 32 * 14 * 14);
  EXPECT_EQ(units.back().in_floats, 64 * 7 * 7);
  EXPECT_EQ(units.back().out_floats, 10);
  for (std::size_t i = 0; i + 1 < units.size(); ++i) EXPECT_EQ(units[i].out_floats, units[i + 1].in_floats);
  // stage1.0: two 3×3 convs 16→16 at 28×28; stage2.0: 16→32 and 32→32 at 14×14 plus the 1×1 shortcut
  EXPECT_EQ(units[1].forward_flops_per_image, 2.0 * 2 * 16 * 28 * 28 * 16 * 9);
  EXPECT_EQ(units[3].forward_flops_per_image, 2.0 * 32 * 14 * 14 * (16 * 9 + 32 * 9 + 16));
  EXPECT_EQ(units.back().forward_flops_per_image, 2.0 * 64 * 10);
}

// Every split of n units into p contiguous parts: the balanced one has the smallest maximum.
TEST(ResnetPartition, BalancedSplitMinimisesTheLargestStage) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  std::vector<double> costs;
  for (const auto& u : resnet_pipeline_units(config)) costs.push_back(u.forward_flops_per_image);
  const int n = static_cast<int>(costs.size());
  for (int p = 1; p <= n; ++p) {
    const auto counts = resnet_balanced_units_per_stage(config, p);
    ASSERT_EQ(static_cast<int>(counts.size()), p);
    std::vector<double> stage_costs;
    std::size_t i = 0;
    for (auto c : counts) {
      ASSERT_GE(c, 1);
      double sum = 0;
      for (std::int64_t k = 0; k < c; ++k) sum += costs[i++];
      stage_costs.push_back(sum);
    }
    ASSERT_EQ(i, costs.size());
    const double largest = *std::max_element(stage_costs.begin(), stage_costs.end());
    // brute force over the cut positions (bit masks of the n − 1 gaps with p − 1 cuts)
    double best = 1e300;
    for (unsigned mask = 0; mask < (1u << (n - 1)); ++mask) {
      if (__builtin_popcount(mask) != p - 1) continue;
      double part = 0, worst = 0;
      for (int u = 0; u < n; ++u) {
        part += costs[static_cast<std::size_t>(u)];
        if (u == n - 1 || (mask >> u & 1u)) worst = std::max(worst, part), part = 0;
      }
      best = std::min(best, worst);
    }
    EXPECT_DOUBLE_EQ(largest, best) << p << " stages";
  }
  // two stages: stem..stage2.0 | stage2.1..head, 20.3 M and 20.1 M forward FLOPs per image
  EXPECT_EQ(resnet_balanced_units_per_stage(config, 2), (std::vector<std::int64_t>{4, 4}));
  EXPECT_THROW(resnet_balanced_units_per_stage(config, 9), UserError);
  EXPECT_THROW(resnet_balanced_units_per_stage(config, 0), UserError);
}

TEST(ResnetPartition, HandSplitIsCheckedAndBecomesUnitRanges) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  const std::vector<std::int64_t> counts{1, 6, 1};
  EXPECT_EQ(resnet_stage_partitions(config, counts),
            (std::vector<ResnetPartition>{{0, 1}, {1, 7}, {7, 8}}));
  for (const std::vector<std::int64_t>& bad : {std::vector<std::int64_t>{3, 3}, {0, 8}, {4, 5}, {}}) {
    try {
      resnet_stage_partitions(config, bad);
      FAIL() << "expected UserError";
    } catch (const UserError& e) {
      EXPECT_NE(std::string(e.what()).find("must give each stage at least one layer and 8 in all"),
                std::string::npos)
          << e.what();
    }
  }
  MemoryTracker tracker;
  EXPECT_THROW(ResnetModel(config, 1, Backend::reference, tracker, {3, 3}), UserError);
  EXPECT_THROW(ResnetModel(config, 1, Backend::reference, tracker, {0, 9}), UserError);
  EXPECT_EQ(tracker.usage().total_current, 0);
}

// Parameters, statistics and gradients split exactly between the stages; activations are the
// slots' sets plus one scratch tensor; the backward scratch is shared by the slots.
TEST(ResnetPartition, TrackedMemoryPerPartitionAndSlot) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  const std::int64_t batch = 3, slots = 2;
  std::int64_t params = 0, statistics = 0;
  for (const auto& partition : resnet_stage_partitions(config, std::vector<std::int64_t>{2, 3, 3})) {
    MemoryTracker tracker;
    ResnetModel stage(config, batch, Backend::reference, tracker, partition, slots);
    const MemoryUsage& usage = tracker.usage();
    params += stage.parameter_count();
    statistics += static_cast<std::int64_t>(stage.running_statistics_flat().size());
    EXPECT_EQ(usage.of(MemoryCategory::grads), 4 * stage.parameter_count());
    const std::int64_t labels = stage.has_head() ? 4 * slots * batch : 0;
    EXPECT_EQ(usage.of(MemoryCategory::activations),
              resnet_activation_bytes(config, batch, partition, slots) + labels);
    EXPECT_EQ(stage.slot_activation_bytes(),
              resnet_slot_activation_bytes(config, batch, partition) + labels / slots);
    // one more slot costs exactly one slot's set
    EXPECT_EQ(resnet_activation_bytes(config, batch, partition, slots + 1) -
                  resnet_activation_bytes(config, batch, partition, slots),
              resnet_slot_activation_bytes(config, batch, partition));
    EXPECT_EQ(usage.of(MemoryCategory::workspace), resnet_activation_gradient_bytes(config, batch, partition));
  }
  EXPECT_EQ(params, resnet_parameter_count(config));
  EXPECT_EQ(statistics, 2 * resnet_batchnorm_channels(config));
  // The first stage's slot holds its images and the stem's and stage1's tensors: the largest.
  EXPECT_GT(resnet_slot_activation_bytes(config, batch, {0, 2}), resnet_slot_activation_bytes(config, batch, {5, 8}));
}

// Standard normal pixels and labels below 10, from a fixed stream.
void random_batch(std::int64_t N, std::vector<float>& images, std::vector<std::int32_t>& labels) {
  const CounterRng rng(23, 0);
  images.resize(static_cast<std::size_t>(N * 28 * 28));
  labels.resize(static_cast<std::size_t>(N));
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(rng.normal(i));
  for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(rng.below(images.size() + i, 10));
}

// Largest |a − b| over the tensor divided by the tensor's largest |b|.
double relative_difference(std::span<const float> a, std::span<const float> b) {
  double scale = 0, worst = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
  }
  return scale > 0 ? worst / scale : worst;
}

struct ChainCase {
  Backend backend;
  std::vector<std::int64_t> units_per_stage;
};

class ResnetStageChain : public ::testing::TestWithParam<ChainCase> {};

TEST_P(ResnetStageChain, MatchesTheUnsplitModelOnTheSameMicroBatches) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  const Backend backend = GetParam().backend;
  constexpr std::int64_t kMicro = 3, kMicroBatches = 2, kSlots = 2, kSeed = 31;
  std::vector<float> images;
  std::vector<std::int32_t> labels;
  random_batch(kMicro * kMicroBatches, images, labels);
  const auto micro_images = [&](std::int64_t i) { return images.data() + i * kMicro * 28 * 28; };
  const auto micro_labels = [&](std::int64_t i) { return labels.data() + i * kMicro; };

  MemoryTracker tracker;
  ResnetModel whole(config, kMicro, backend, tracker);
  whole.init_weights(kSeed);
  whole.zero_grad();
  std::vector<float> whole_losses;
  for (std::int64_t i = 0; i < kMicroBatches; ++i) {  // gradient accumulation: F0 B0 F1 B1
    whole_losses.push_back(whole.forward(micro_images(i), micro_labels(i), kMicro, true));
    whole.backward();
  }

  std::vector<ResnetModel> stages;
  for (const auto& partition : resnet_stage_partitions(config, GetParam().units_per_stage)) {
    stages.emplace_back(config, kMicro, backend, tracker, partition, kSlots);
    stages.back().init_weights(kSeed);
    stages.back().zero_grad();
  }
  // every forward (micro-batch i in slot i), then every backward: GPipe on one thread
  std::vector<float> split_losses;
  for (std::int64_t i = 0; i < kMicroBatches; ++i) {
    const float* x = micro_images(i);
    for (auto& stage : stages) {
      const float loss = stage.forward(i, x, micro_labels(i), kMicro, true);
      if (stage.has_head()) split_losses.push_back(loss);
      else x = stage.output(i);
    }
  }
  for (std::int64_t i = 0; i < kMicroBatches; ++i) {
    const float* d = nullptr;
    for (auto s = stages.size(); s-- > 0;) {
      stages[s].backward(i, d);
      if (!stages[s].has_stem()) d = stages[s].input_gradient();
    }
  }

  ASSERT_EQ(split_losses.size(), whole_losses.size());
  for (std::size_t i = 0; i < whole_losses.size(); ++i)
    EXPECT_NEAR(split_losses[i], whole_losses[i], 1e-6 * std::fabs(whole_losses[i])) << "micro-batch " << i;

  std::map<std::string, std::span<const float>> whole_params, whole_grads, whole_statistics;
  for (const auto& v : whole.parameter_views()) {
    whole_params[v.name] = {v.param, static_cast<std::size_t>(v.numel)};
    whole_grads[v.name] = {v.grad, static_cast<std::size_t>(v.numel)};
  }
  for (const auto& v : whole.statistics_views()) whole_statistics[v.name] = {v.values, static_cast<std::size_t>(v.numel)};
  std::size_t tensors = 0, statistics = 0;
  double worst_gradient = 0, worst_statistic = 0;
  for (auto& stage : stages) {
    for (const auto& v : stage.parameter_views()) {
      ++tensors;
      const std::span<const float> param(v.param, static_cast<std::size_t>(v.numel));
      const std::span<const float> grad(v.grad, static_cast<std::size_t>(v.numel));
      ASSERT_TRUE(whole_params.contains(v.name)) << v.name;
      EXPECT_TRUE(std::ranges::equal(param, whole_params[v.name])) << v.name << ": the split must not change init";
      const double difference = relative_difference(grad, whole_grads[v.name]);
      worst_gradient = std::max(worst_gradient, difference);
      EXPECT_LE(difference, 1e-6) << v.name << " gradient";
      EXPECT_TRUE(std::ranges::any_of(grad, [](float g) { return g != 0; })) << v.name;
    }
    for (const auto& v : stage.statistics_views()) {
      ++statistics;
      const double difference =
          relative_difference({v.values, static_cast<std::size_t>(v.numel)}, whole_statistics[v.name]);
      worst_statistic = std::max(worst_statistic, difference);
      EXPECT_LE(difference, 1e-6) << v.name;
    }
  }
  EXPECT_EQ(tensors, whole_params.size());
  EXPECT_EQ(statistics, whole_statistics.size());
  std::printf("%zu stages: largest relative gradient difference %.3g, running statistics %.3g\n", stages.size(),
              worst_gradient, worst_statistic);
}

std::string chain_name(const ::testing::TestParamInfo<ChainCase>& info) {
  std::string name(kernels::to_string(info.param.backend));
  for (auto c : info.param.units_per_stage) name += "_" + std::to_string(c);
  return name;
}

INSTANTIATE_TEST_SUITE_P(Splits, ResnetStageChain,
                         ::testing::Values(ChainCase{Backend::reference, {4, 4}}, ChainCase{Backend::cpu, {4, 4}},
                                           ChainCase{Backend::reference, {3, 3, 2}},
                                           ChainCase{Backend::cpu, {3, 3, 2}},
                                           ChainCase{Backend::cpu, {1, 6, 1}}),
                         chain_name);

}  // namespace
}  // namespace sb::resnet
