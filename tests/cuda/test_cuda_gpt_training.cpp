// SPDX-License-Identifier: Apache-2.0
// The GPT reference model trained on the GPU: every buffer on the device (cuda back-end), the
// same tokens and initial weights as the model on the reference back-end in host memory;
// the loss and every parameter gradient of the first step, then the losses of AdamW steps; in
// fp32, and with bf16 storage (the native tensor-core kernels) against the reference back-end's
// GptModelT<bf16>. Leaves out model parallelism on GPUs (tests/cuda/test_cuda_train.cpp) and speed
// (bench/bench_cuda_gpt_step.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/device_memory.hpp"
#include "core/rng.hpp"
#include "cuda_test_support.hpp"
#include "models/gpt/gpt.hpp"
#include "optim/adamw.hpp"

namespace sb::kernels::testing {
namespace {

constexpr std::int64_t kBatch = 4, kSeqLen = 64;

// (B, T) tokens and their next-token targets, drawn from the vocabulary.
struct Batch {
  std::vector<std::int32_t> tokens, targets;
};
Batch synthetic_batch(const gpt::GptConfig& config, std::uint64_t step) {
  const CounterRng rng(99, step);
  Batch b;
  for (std::int64_t i = 0; i < kBatch * (kSeqLen + 1); ++i)
    b.tokens.push_back(static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(config.vocab))));
  b.targets.assign(b.tokens.begin() + 1, b.tokens.end());
  b.tokens.resize(static_cast<std::size_t>(kBatch * kSeqLen));
  b.targets.resize(static_cast<std::size_t>(kBatch * kSeqLen));
  return b;
}

std::vector<float> to_host(const float* data, Device device, std::int64_t n) {
  std::vector<float> host(static_cast<std::size_t>(n));
  copy_device_bytes(host.data(), Device::cpu, data, device, host.size() * sizeof(float));
  return host;
}

// Each parameter gradient of `actual` (device memory) within `relative` of the largest element
// of the same tensor of `expected` (host memory); every tensor must have a non-zero gradient.
void expect_gradients_close(const std::vector<gpt::ParameterView>& expected,
                            const std::vector<gpt::ParameterView>& actual, float relative) {
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t k = 0; k < expected.size(); ++k) {
    const auto& e = expected[k];
    const std::vector<float> got = to_host(actual[k].grad, Device::cuda, e.numel);
    float largest = 0, worst = 0;
    for (std::int64_t i = 0; i < e.numel; ++i) {
      largest = std::max(largest, std::fabs(e.grad[i]));
      worst = std::max(worst, std::fabs(e.grad[i] - got[static_cast<std::size_t>(i)]));
    }
    EXPECT_GT(largest, 0.0f) << e.name;
    EXPECT_LE(worst, relative * largest) << e.name << ": largest |grad| " << largest;
  }
}

class CudaGptTraining : public CudaTest {};

TEST_F(CudaGptTraining, EveryBufferIsOnTheDevice) {
  MemoryTracker tracker;
  gpt::GptModel model(gpt::gpt_config_by_name("gpt-nano"), kBatch, kSeqLen, Backend::cuda, tracker);
  EXPECT_EQ(model.device(), Device::cuda);
  cudaPointerAttributes attributes{};
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, model.parameters_flat().data()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  ASSERT_EQ(cudaPointerGetAttributes(&attributes, model.gradients_flat().data()), cudaSuccess);
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_GT(tracker.usage().of(MemoryCategory::activations), 0);
}

TEST_F(CudaGptTraining, FirstStepMatchesTheReferenceThenAdamWTrains) {
  const gpt::GptConfig config = gpt::gpt_config_by_name("gpt-nano");  // L2 C64 NH4 T64 V256
  MemoryTracker host_tracker, device_tracker;
  gpt::GptModel expected(config, kBatch, kSeqLen, Backend::reference, host_tracker);
  gpt::GptModel actual(config, kBatch, kSeqLen, Backend::cuda, device_tracker);
  expected.init_weights(1337);
  actual.init_weights(1337);
  // The same bytes charged per category on both devices.
  for (int c = 0; c < kMemoryCategoryCount; ++c)
    EXPECT_EQ(device_tracker.usage().current[c], host_tracker.usage().current[c]) << to_string(static_cast<MemoryCategory>(c));
  EXPECT_EQ(to_host(actual.parameters_flat().data(), Device::cuda, actual.parameter_count()),
            std::vector<float>(expected.parameters_flat().begin(), expected.parameters_flat().end()));

  const Batch first = synthetic_batch(config, 0);
  expected.zero_grad();
  actual.zero_grad();
  const float loss_expected = expected.forward(first.tokens.data(), first.targets.data(), kBatch, kSeqLen);
  const float loss_actual = actual.forward(first.tokens.data(), first.targets.data(), kBatch, kSeqLen);
  EXPECT_NEAR(loss_actual, loss_expected, 1e-5 * std::fabs(loss_expected));
  EXPECT_NEAR(loss_expected, std::log(static_cast<float>(config.vocab)), 0.1);  // untrained: ~ln V
  expected.backward();
  actual.backward();
  // Each gradient tensor within 1e-4 of its largest element (fp32 sums in another order).
  expect_gradients_close(expected.parameter_views(), actual.parameter_views(), 1e-4f);

  // AdamW on the device: the state lives there too, and the losses follow the reference's.
  const optim::AdamWConfig adamw{.lr = 1e-3};
  optim::AdamW expected_optimizer(expected.parameter_slices(), adamw, Backend::reference, host_tracker);
  optim::AdamW actual_optimizer(actual.parameter_slices(), adamw, Backend::cuda, device_tracker);
  EXPECT_EQ(device_tracker.usage().of(MemoryCategory::optimizer), host_tracker.usage().of(MemoryCategory::optimizer));
  expected_optimizer.clip_and_step(adamw.lr);
  actual_optimizer.clip_and_step(adamw.lr);
  const Batch fixed = synthetic_batch(config, 1);  // one batch, so the loss must fall
  std::vector<float> losses;
  for (int step = 1; step <= 8; ++step) {
    expected.zero_grad();
    actual.zero_grad();
    const float want = expected.forward(fixed.tokens.data(), fixed.targets.data(), kBatch, kSeqLen);
    const float got = actual.forward(fixed.tokens.data(), fixed.targets.data(), kBatch, kSeqLen);
    EXPECT_NEAR(got, want, 1e-3 * std::fabs(want)) << "step " << step;
    losses.push_back(got);
    expected.backward();
    actual.backward();
    expected_optimizer.clip_and_step(adamw.lr);
    actual_optimizer.clip_and_step(adamw.lr);
  }
  EXPECT_LT(losses.back(), losses.front() - 0.05f) << "8 AdamW steps on one batch did not lower the loss";
}

// bf16 storage: the native kernels against the reference's widen-compute-round, through a whole
// model. Inputs to every kernel drift apart by bf16 roundings layer after layer, so the bounds
// are bf16's (2^-8 relative per rounding), not fp32's.
TEST_F(CudaGptTraining, Bf16FirstStepMatchesTheReferenceThenAdamWTrains) {
  const gpt::GptConfig config = gpt::gpt_config_by_name("gpt-nano");
  MemoryTracker host_tracker, device_tracker;
  gpt::GptModelT<bf16> expected(config, kBatch, kSeqLen, Backend::reference, host_tracker);
  gpt::GptModelT<bf16> actual(config, kBatch, kSeqLen, Backend::cuda, device_tracker);
  expected.init_weights(1337);
  actual.init_weights(1337);
  EXPECT_EQ(to_host(actual.parameters_flat().data(), Device::cuda, actual.parameter_count()),
            std::vector<float>(expected.parameters_flat().begin(), expected.parameters_flat().end()));

  const Batch first = synthetic_batch(config, 0);
  expected.zero_grad();
  actual.zero_grad();
  const float loss_expected = expected.forward(first.tokens.data(), first.targets.data(), kBatch, kSeqLen);
  const float loss_actual = actual.forward(first.tokens.data(), first.targets.data(), kBatch, kSeqLen);
  EXPECT_NEAR(loss_actual, loss_expected, 5e-3 * std::fabs(loss_expected));
  expected.backward();
  actual.backward();
  // Each gradient tensor within 5% of its largest element: a wrong index or a missing term
  // moves it by O(1) of it.
  expect_gradients_close(expected.parameter_views(), actual.parameter_views(), 5e-2f);

  const optim::AdamWConfig adamw{.lr = 1e-3};
  optim::AdamW optimizer(actual.parameter_slices(), adamw, Backend::cuda, device_tracker);
  optimizer.clip_and_step(adamw.lr);
  actual.sync_storage_parameters();
  const Batch fixed = synthetic_batch(config, 1);
  std::vector<float> losses;
  for (int step = 1; step <= 8; ++step) {
    actual.zero_grad();
    losses.push_back(actual.forward(fixed.tokens.data(), fixed.targets.data(), kBatch, kSeqLen));
    EXPECT_TRUE(std::isfinite(losses.back())) << "step " << step;
    actual.backward();
    optimizer.clip_and_step(adamw.lr);
    actual.sync_storage_parameters();
  }
  EXPECT_LT(losses.back(), losses.front() - 0.05f) << "8 AdamW steps on one batch did not lower the bf16 loss";
}

}  // namespace
}  // namespace sb::kernels::testing
