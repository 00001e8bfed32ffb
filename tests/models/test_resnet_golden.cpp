// SPDX-License-Identifier: Apache-2.0
// resnet-mini against PyTorch (models/resnet/resnet_mini_golden.h5): logits, loss, every
// gradient, running statistics, 10 SGD steps and eval logits, on every compiled backend.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "core/memory.hpp"
#include "kernels/kernels.hpp"
#include "models/resnet/resnet.hpp"
#include "optim/sgd.hpp"
#include "tests/models/backend_param.hpp"
#include "tests/models/golden_file.hpp"

namespace sb::resnet {
namespace {

// float32 against float32 with different summation orders (im2col GEMMs, BatchNorm sums over
// N·H·W, torch's reductions); 1e-4 leaves room for other BLAS kernels. It holds only while no
// ReLU input lies within rounding error of zero: one that flips moves a BatchNorm gradient by
// about 1/sqrt(N·H·W), 1%. The golden batch's smallest ReLU margin is ~1e-6 of the tensor's
// largest value, so a backend's activations must be that accurate.
constexpr double kGoldenTolerance = 1e-4;
// After 10 SGD steps, flips have happened: PyTorch itself moves by the spread recorded in the
// golden file when its weights change by one rounding (make_golden.py). Each tolerance is at
// least 10 times that spread, checked below.
constexpr double kStepsGradNormTolerance = 3e-2;   // torch's spread 2.6e-3 (steps 7-9)
constexpr double kStepsEvalTolerance = 3e-3;       // torch's spread 2.5e-4 (eval logits)
constexpr double kSpreadMargin = 10.0;

std::string golden_path() {
  return std::string(SB_SOURCE_DIR) + "/models/resnet/resnet_mini_golden.h5";
}

double scalar_error(double ours, double torch) { return std::abs(ours - torch) / std::abs(torch); }

class ResnetGolden : public ::testing::TestWithParam<kernels::Backend> {
 protected:
  void SetUp() override {
    const ResnetConfig mini = resnet_config_by_name("resnet-mini");
    ASSERT_EQ(golden_.int_attribute("format_version"), 1);
    ASSERT_EQ(golden_.int_attribute("config_image_channels"), mini.image_channels);
    ASSERT_EQ(golden_.int_attribute("config_image_size"), mini.image_size);
    ASSERT_EQ(golden_.int_attribute("config_classes"), mini.classes);
    ASSERT_EQ(golden_.int_attribute("config_stem_channels"), mini.stem_channels);
    ASSERT_EQ(golden_.double_attribute("batchnorm_momentum"), kBatchNormMomentum);
    ASSERT_EQ(golden_.double_attribute("batchnorm_eps"), kBatchNormEps);
    N_ = golden_.int_attribute("batch");
    images_ = golden_.floats("images");
    labels_ = golden_.ints("labels");
    const std::int64_t S = mini.image_size;
    ASSERT_EQ(golden_.dims("images"), (std::vector<std::int64_t>{N_, mini.image_channels, S, S}));
    ASSERT_EQ(static_cast<std::int64_t>(labels_.size()), N_);

    model_ = std::make_unique<ResnetModel>(mini, N_, GetParam(), tracker_);
    std::int64_t loaded = 0;
    for (const auto& view : model_->parameter_views()) {
      const std::vector<float> values = golden_.floats("params/" + view.name);
      ASSERT_EQ(static_cast<std::int64_t>(values.size()), view.numel) << view.name;
      std::copy(values.begin(), values.end(), view.param);
      loaded += view.numel;
    }
    ASSERT_EQ(loaded, model_->parameter_count());
  }

  // Records the error as a gtest property and on stdout, then checks it.
  void check(const std::string& what, double error) { check(what, error, kGoldenTolerance); }

  void check(const std::string& what, double error, double tolerance) {
    const std::string backend(kernels::to_string(GetParam()));
    RecordProperty(what, fmt::format("{:.3e}", error));
    std::cout << fmt::format("[golden {}] {:<40} relative error {:.3e} (tolerance {:.0e})\n",
                             backend, what, error, tolerance);
    EXPECT_LE(error, tolerance) << what << " on " << backend;
  }

  double logits_error(const std::string& dataset) {
    const std::vector<float> torch_logits = golden_.floats(dataset);
    SB_CHECK(static_cast<std::int64_t>(torch_logits.size()) == N_ * model_->config().classes,
             "{} has {} values", dataset, torch_logits.size());
    return testing::relative_error({model_->logits(), torch_logits.size()}, torch_logits);
  }

  // The tolerance must stay well above how far PyTorch moves under rounding-sized changes.
  void expect_well_conditioned(const std::string& spread_attribute, double tolerance) {
    const double spread = golden_.double_attribute(spread_attribute);
    EXPECT_LE(kSpreadMargin * spread, tolerance)
        << spread_attribute << ": the golden trajectory is too chaotic for this tolerance";
  }

  testing::GoldenFile golden_{golden_path()};
  MemoryTracker tracker_;
  std::unique_ptr<ResnetModel> model_;
  std::int64_t N_ = 0;
  std::vector<float> images_;
  std::vector<std::int32_t> labels_;
};

TEST_P(ResnetGolden, LogitsLossGradientsAndRunningStatistics) {
  const float loss = model_->forward(images_.data(), labels_.data(), N_, /*training=*/true);
  check("logits", logits_error("logits"));
  check("loss", scalar_error(loss, golden_.floats("loss").at(0)));

  model_->zero_grad();
  model_->backward();
  const auto [worst_name, worst] = testing::compare_gradients(
      golden_, model_->parameter_views(), [this](const std::string& what, double error) { check(what, error); });
  std::cout << fmt::format("[golden {}] worst gradient: {} {:.3e}\n",
                           kernels::to_string(GetParam()), worst_name, worst);

  for (const auto& view : model_->statistics_views()) {
    const std::vector<float> torch_stats = golden_.floats("running_stats/" + view.name);
    ASSERT_EQ(static_cast<std::int64_t>(torch_stats.size()), view.numel) << view.name;
    check(view.name, testing::relative_error({view.values, torch_stats.size()}, torch_stats));
  }
  // eval mode with those running statistics
  model_->forward(images_.data(), nullptr, N_, /*training=*/false);
  check("eval logits", logits_error("eval_logits"));
}

TEST_P(ResnetGolden, TenSgdStepsThenEvalLogits) {
  optim::SgdConfig config;
  config.lr = golden_.double_attribute("sgd_lr");
  config.momentum = golden_.double_attribute("sgd_momentum");
  config.weight_decay = golden_.double_attribute("sgd_weight_decay");
  config.grad_clip = 0.0;
  optim::Sgd optimizer(model_->parameter_slices(), config, GetParam(), tracker_);

  const std::vector<float> torch_losses = golden_.floats("losses_10_steps");
  const std::vector<float> torch_norms = golden_.floats("grad_norms_10_steps");
  ASSERT_EQ(torch_losses.size(), 10u);
  ASSERT_EQ(torch_norms.size(), 10u);
  double worst_loss = 0.0, worst_norm = 0.0;
  for (std::size_t step = 0; step < torch_losses.size(); ++step) {
    model_->zero_grad();
    const float loss = model_->forward(images_.data(), labels_.data(), N_, /*training=*/true);
    model_->backward();
    const double norm = optimizer.clip_and_step(config.lr);
    std::cout << fmt::format("[golden {}] step {} loss {:.6f} (torch {:.6f}) grad norm {:.5f} "
                             "(torch {:.5f})\n", kernels::to_string(GetParam()), step, loss,
                             torch_losses[step], norm, torch_norms[step]);
    worst_loss = std::max(worst_loss, scalar_error(loss, torch_losses[step]));
    worst_norm = std::max(worst_norm, scalar_error(norm, torch_norms[step]));
  }
  EXPECT_EQ(optimizer.step_count(), 10);
  expect_well_conditioned("losses_10_steps_spread", kGoldenTolerance);
  expect_well_conditioned("grad_norms_10_steps_spread", kStepsGradNormTolerance);
  expect_well_conditioned("eval_logits_after_10_steps_spread", kStepsEvalTolerance);
  expect_well_conditioned("eval_loss_after_10_steps_spread", kStepsEvalTolerance);
  check("10-step losses", worst_loss);
  check("10-step grad norms", worst_norm, kStepsGradNormTolerance);

  // eval mode: the running statistics of the 10 training forwards, no batch statistics
  const std::vector<float> stats_before(model_->running_statistics_flat().begin(),
                                        model_->running_statistics_flat().end());
  const float eval_loss = model_->forward(images_.data(), labels_.data(), N_, /*training=*/false);
  check("eval logits after 10 steps", logits_error("eval_logits_after_10_steps"),
        kStepsEvalTolerance);
  check("eval loss after 10 steps",
        scalar_error(eval_loss, golden_.floats("eval_loss_after_10_steps").at(0)),
        kStepsEvalTolerance);
  EXPECT_TRUE(std::ranges::equal(stats_before, model_->running_statistics_flat()))
      << "an eval forward must not touch the running statistics";
}

INSTANTIATE_TEST_SUITE_P(Backends, ResnetGolden,
                         ::testing::Values(kernels::Backend::reference, kernels::Backend::cpu),
                         kernels::BackendName{});

}  // namespace
}  // namespace sb::resnet
