// SPDX-License-Identifier: Apache-2.0
// GPT-nano against PyTorch (models/gpt/gpt_nano_golden.h5): logits, loss, every gradient,
// and 10 AdamW steps, on every compiled backend. Leaves out larger configs (no golden file).
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

#include "core/memory.hpp"
#include "kernels/kernels.hpp"
#include "models/gpt/gpt.hpp"
#include "optim/adamw.hpp"
#include "tests/models/backend_param.hpp"
#include "tests/models/golden_file.hpp"

namespace sb::gpt {
namespace {

// float32 against float32 with different summation orders (BLAS blocking, torch's
// reductions): errors measured here are below 1e-6; 1e-4 leaves room for other BLAS kernels.
constexpr double kGoldenTolerance = 1e-4;

std::string golden_path() { return std::string(SB_SOURCE_DIR) + "/models/gpt/gpt_nano_golden.h5"; }

class GptGolden : public ::testing::TestWithParam<kernels::Backend> {
 protected:
  void SetUp() override {
    const GptConfig nano = gpt_config_by_name("gpt-nano");
    ASSERT_EQ(golden_.int_attribute("format_version"), 1);
    ASSERT_EQ(golden_.int_attribute("config_layers"), nano.layers);
    ASSERT_EQ(golden_.int_attribute("config_channels"), nano.channels);
    ASSERT_EQ(golden_.int_attribute("config_heads"), nano.heads);
    ASSERT_EQ(golden_.int_attribute("config_max_seq_len"), nano.max_seq_len);
    ASSERT_EQ(golden_.int_attribute("config_vocab"), nano.vocab);
    B_ = golden_.int_attribute("batch");
    T_ = golden_.int_attribute("seq_len");
    tokens_ = golden_.ints("tokens");
    targets_ = golden_.ints("targets");
    ASSERT_EQ(static_cast<std::int64_t>(tokens_.size()), B_ * T_);
    ASSERT_EQ(static_cast<std::int64_t>(targets_.size()), B_ * T_);

    model_ = std::make_unique<GptModel>(nano, B_, T_, GetParam(), tracker_);
    for (const auto& view : model_->parameter_views()) {
      const std::vector<float> values = golden_.floats("params/" + view.name);
      ASSERT_EQ(static_cast<std::int64_t>(values.size()), view.numel) << view.name;
      std::copy(values.begin(), values.end(), view.param);
    }
  }

  // Records the error as a gtest property and on stdout, then checks it.
  void check(const std::string& what, double error) {
    const std::string backend(kernels::to_string(GetParam()));
    RecordProperty(what, fmt::format("{:.3e}", error));
    std::cout << fmt::format("[golden {}] {:<22} relative error {:.3e}\n", backend, what, error);
    EXPECT_LE(error, kGoldenTolerance) << what << " on " << backend;
  }

  testing::GoldenFile golden_{golden_path()};
  MemoryTracker tracker_;
  std::unique_ptr<GptModel> model_;
  std::int64_t B_ = 0, T_ = 0;
  std::vector<std::int32_t> tokens_, targets_;
};

TEST_P(GptGolden, LogitsLossAndEveryGradient) {
  const float loss = model_->forward(tokens_.data(), targets_.data(), B_, T_);
  const std::vector<float> torch_logits = golden_.floats("logits");
  const auto V = model_->config().vocab;
  ASSERT_EQ(static_cast<std::int64_t>(torch_logits.size()), B_ * T_ * V);
  check("logits", testing::relative_error({model_->logits(), torch_logits.size()}, torch_logits));
  const float torch_loss = golden_.floats("loss").at(0);
  check("loss", std::abs(static_cast<double>(loss) - torch_loss) / std::abs(torch_loss));

  model_->zero_grad();
  model_->backward();
  const auto [worst_name, worst] = testing::compare_gradients(
      golden_, model_->parameter_views(), [this](const std::string& what, double error) { check(what, error); });
  std::cout << fmt::format("[golden {}] worst gradient: {} {:.3e}\n",
                           kernels::to_string(GetParam()), worst_name, worst);
}

TEST_P(GptGolden, TenAdamWStepsFollowTorch) {
  optim::AdamWConfig config;
  config.lr = golden_.double_attribute("adamw_lr");
  config.beta1 = golden_.double_attribute("adamw_beta1");
  config.beta2 = golden_.double_attribute("adamw_beta2");
  config.eps = golden_.double_attribute("adamw_eps");
  config.weight_decay = golden_.double_attribute("adamw_weight_decay");
  config.grad_clip = golden_.double_attribute("grad_clip");
  optim::AdamW optimizer(model_->parameter_slices(), config, GetParam(), tracker_);

  const std::vector<float> torch_losses = golden_.floats("losses_10_steps");
  const std::vector<float> torch_norms = golden_.floats("grad_norms_10_steps");
  ASSERT_EQ(torch_losses.size(), 10u);
  double worst_loss = 0.0, worst_norm = 0.0;
  for (std::size_t step = 0; step < torch_losses.size(); ++step) {
    model_->zero_grad();
    const float loss = model_->forward(tokens_.data(), targets_.data(), B_, T_);
    model_->backward();
    const double norm = optimizer.clip_and_step(config.lr);
    const double loss_error = std::abs(loss - torch_losses[step]) / std::abs(torch_losses[step]);
    const double norm_error = std::abs(norm - torch_norms[step]) / std::abs(torch_norms[step]);
    std::cout << fmt::format("[golden {}] step {} loss {:.6f} (torch {:.6f}) grad norm {:.5f} "
                             "(torch {:.5f})\n", kernels::to_string(GetParam()), step, loss,
                             torch_losses[step], norm, torch_norms[step]);
    worst_loss = std::max(worst_loss, loss_error);
    worst_norm = std::max(worst_norm, norm_error);
  }
  EXPECT_EQ(optimizer.step_count(), 10);
  check("10-step losses", worst_loss);
  check("10-step grad norms", worst_norm);
}

INSTANTIATE_TEST_SUITE_P(Backends, GptGolden,
                         ::testing::Values(kernels::Backend::reference, kernels::Backend::cpu),
                         kernels::BackendName{});

}  // namespace
}  // namespace sb::gpt
