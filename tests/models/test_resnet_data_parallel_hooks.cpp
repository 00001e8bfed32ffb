// SPDX-License-Identifier: Apache-2.0
// The two hooks data parallelism needs from ResnetModel, without MPI: synchronised BatchNorm
// (two models in two threads summing through a barrier equal one model on the whole batch) and
// the gradient-ready callback (ranges tile the gradients, each final when reported).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <span>
#include <thread>
#include <utility>
#include <vector>

#include "core/memory.hpp"
#include "core/rng.hpp"
#include "models/resnet/resnet.hpp"
#include "tests/models/backend_param.hpp"

namespace sb::resnet {
namespace {

using kernels::Backend;

void random_batch(std::int64_t N, std::vector<float>& images, std::vector<std::int32_t>& labels) {
  const CounterRng rng(19, 0);
  images.resize(static_cast<std::size_t>(N * 28 * 28));
  labels.resize(static_cast<std::size_t>(N));
  for (std::size_t i = 0; i < images.size(); ++i) images[i] = static_cast<float>(rng.normal(i));
  for (std::size_t i = 0; i < labels.size(); ++i) {
    labels[i] = static_cast<std::int32_t>(rng.below(images.size() + i, 10));
  }
}

// all_reduce_sum over two threads ("ranks"): publish, wait, add both in rank order (so both
// ranks get bit-identical sums), wait before the slots may be overwritten.
class TwoRankSum {
 public:
  void all_reduce_sum(int rank, std::span<double> values) {
    slots_[rank].assign(values.begin(), values.end());
    barrier_.arrive_and_wait();
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = slots_[0][i] + slots_[1][i];
    barrier_.arrive_and_wait();
  }

 private:
  std::barrier<> barrier_{2};
  std::array<std::vector<double>, 2> slots_;
};

// |actual - expected| <= rtol·|expected| + atol·max|expected|: gradients of O(1e-6) beside
// ones of O(1) are fp32 noise relative to their tensor.
void expect_close(std::span<const float> actual, std::span<const float> expected, double rtol,
                  double atol, const char* what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  double scale = 0;
  for (float e : expected) scale = std::max(scale, static_cast<double>(std::fabs(e)));
  std::size_t failed = 0, worst = 0;
  double worst_ratio = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double allowed = rtol * std::fabs(expected[i]) + atol * scale;
    const double ratio = std::fabs(actual[i] - expected[i]) / allowed;
    if (ratio > 1) ++failed;
    if (ratio > worst_ratio) worst_ratio = ratio, worst = i;
  }
  EXPECT_EQ(failed, 0u) << what << ": worst at " << worst << " actual " << actual[worst]
                        << " expected " << expected[worst];
}

// Reference kernels only: plain loops, safe from two threads (Kokkos is not).
TEST(ResnetSynchronisedBatchnorm, TwoHalvesEqualTheWholeBatch) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  const std::int64_t N = 6, half = N / 2;
  std::vector<float> images;
  std::vector<std::int32_t> labels;
  random_batch(N, images, labels);
  MemoryTracker tracker;
  ResnetModel whole(config, N, Backend::reference, tracker);
  whole.init_weights(3);
  const float whole_loss = whole.forward(images.data(), labels.data(), N, true);
  whole.zero_grad();
  whole.backward();

  std::array<ResnetModel, 2> ranks{ResnetModel(config, half, Backend::reference, tracker),
                                   ResnetModel(config, half, Backend::reference, tracker)};
  TwoRankSum sum;
  std::array<float, 2> losses{};
  std::array<std::thread, 2> threads;
  for (int r = 0; r < 2; ++r) {
    ranks[r].init_weights(3);
    ranks[r].set_batchnorm_reducer(
        [&sum, r](std::span<double> values) { sum.all_reduce_sum(r, values); });
  }
  for (int r = 0; r < 2; ++r) {
    threads[r] = std::thread([&, r] {
      const std::int64_t first = r * half;
      losses[r] = ranks[r].forward(images.data() + first * 28 * 28, labels.data() + first, half,
                                   true);
      ranks[r].zero_grad();
      ranks[r].backward();
    });
  }
  for (auto& t : threads) t.join();

  EXPECT_NEAR((losses[0] + losses[1]) / 2, whole_loss, 1e-5 * std::fabs(whole_loss));
  // The halves' mean-loss gradients, averaged (what a data-parallel all-reduce forms).
  std::vector<float> averaged(ranks[0].gradients_flat().size());
  for (std::size_t i = 0; i < averaged.size(); ++i) {
    averaged[i] = (ranks[0].gradients_flat()[i] + ranks[1].gradients_flat()[i]) / 2;
  }
  const auto views = whole.parameter_views();
  std::size_t offset = 0;
  for (const auto& view : views) {
    const auto n = static_cast<std::size_t>(view.numel);
    expect_close(std::span<const float>(averaged).subspan(offset, n),
                 std::span<const float>(view.grad, n), 1e-3, 1e-4, view.name.c_str());
    offset += n;
  }
  EXPECT_TRUE(std::ranges::equal(ranks[0].running_statistics_flat(),
                                 ranks[1].running_statistics_flat()));
  expect_close(ranks[0].running_statistics_flat(), whole.running_statistics_flat(), 1e-5, 1e-6,
               "running statistics");
  // Without the reducer each half normalises by its own statistics: the check above has teeth.
  ResnetModel alone(config, half, Backend::reference, tracker);
  alone.init_weights(3);
  alone.forward(images.data(), labels.data(), half, true);
  EXPECT_FALSE(std::ranges::equal(alone.running_statistics_flat(),
                                  ranks[0].running_statistics_flat()));
}

class ResnetGradientReady : public ::testing::TestWithParam<Backend> {};

TEST_P(ResnetGradientReady, RangesTileTheGradientsAndAreFinalWhenReported) {
  const ResnetConfig config = resnet_config_by_name("resnet-mini");
  const std::int64_t N = 3;
  std::vector<float> images;
  std::vector<std::int32_t> labels;
  random_batch(N, images, labels);
  MemoryTracker tracker;
  ResnetModel model(config, N, GetParam(), tracker);
  model.init_weights(8);
  struct Report {
    std::int64_t offset, count;
    std::vector<float> gradient;  // as it was when reported
  };
  std::vector<Report> reports;
  model.set_gradient_ready_callback([&](std::int64_t offset, std::int64_t count) {
    const auto g = model.gradients_flat().subspan(static_cast<std::size_t>(offset),
                                                  static_cast<std::size_t>(count));
    reports.push_back({offset, count, std::vector<float>(g.begin(), g.end())});
  });
  // Two steps accumulating into one gradient: "final" means final for this backward().
  for (int step = 0; step < 2; ++step) {
    reports.clear();
    model.forward(images.data(), labels.data(), N, true);
    if (step == 0) model.zero_grad();
    model.backward();
    ASSERT_FALSE(reports.empty());
    for (const Report& r : reports) {
      const auto g = model.gradients_flat().subspan(static_cast<std::size_t>(r.offset),
                                                    static_cast<std::size_t>(r.count));
      EXPECT_TRUE(std::ranges::equal(r.gradient, g)) << "step " << step << " offset " << r.offset;
    }
    // fc first, the stem conv last
    const auto views = model.parameter_views();
    EXPECT_EQ(reports.front().offset, model.parameter_count() - views.back().numel -
                                          views[views.size() - 2].numel);
    EXPECT_EQ(reports.back().offset, 0);
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    for (const Report& r : reports) ranges.emplace_back(r.offset, r.count);
    std::ranges::sort(ranges);
    std::int64_t covered = 0;
    for (const auto& [offset, count] : ranges) {
      EXPECT_EQ(offset, covered) << "gap or overlap";
      EXPECT_GT(count, 0);
      covered = offset + count;
    }
    EXPECT_EQ(covered, model.parameter_count());
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, ResnetGradientReady,
                         ::testing::Values(Backend::reference, Backend::cpu),
                         kernels::BackendName{});

}  // namespace
}  // namespace sb::resnet
