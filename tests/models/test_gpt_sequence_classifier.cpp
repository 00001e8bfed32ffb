// SPDX-License-Identifier: Apache-2.0
// The GPT as a sequence classifier (models/gpt/sequence_classifier_head.hpp on forward_hidden /
// backward_hidden of gpt.hpp) against central finite differences of its own loss: the
// directional derivative in every parameter tensor, the GPT's and the head's. Padding past a row's length changes nothing; the loss of a two-class head at the GPT's
// initialisation is near log 2. Synthetic bytes: this checks the gradient, not the data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/memory.hpp"
#include "core/rng.hpp"
#include "models/gpt/gpt.hpp"
#include "models/gpt/sequence_classifier_head.hpp"

namespace sb::gpt {
namespace {

constexpr std::int64_t B = 3, T = 5;

struct Classifier {
  GptConfig config{"gpt-fd", 2, 8, 2, 6, 256};
  ClassifierHeadShape shape{8, 2};
  MemoryTracker tracker;
  GptModel model{config, B, T, kernels::Backend::reference, tracker, {}, shape.parameter_count()};
  SequenceClassifierHead head{shape, B};
  std::vector<std::int32_t> tokens, lengths = {5, 3, 1}, labels = {1, 0, 1};

  Classifier() {
    const CounterRng rng(7, 1);
    for (std::int64_t i = 0; i < B * T; ++i) tokens.push_back(static_cast<std::int32_t>(rng.below(i, 256)));
    // weights of order 0.3 rather than the 0.02 of init_weights: gradients well above rounding
    const std::span<float> p = model.parameters_flat();
    const CounterRng draw(7, 2);
    for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(0.3 * draw.normal(i));
  }
  ClassifierHeadTensors head_params() { return classifier_head_views(model.appended_parameters_flat().data(), shape); }
  ClassifierHeadTensors head_grads() { return classifier_head_views(model.appended_gradients_flat().data(), shape); }
  double loss() {
    const float* hidden = model.forward_hidden(tokens.data(), B, T);
    return head.forward(hidden, lengths.data(), labels.data(), B, T, head_params());
  }
  void gradient() {
    model.zero_grad();
    loss();
    std::vector<float> dhidden(static_cast<std::size_t>(B * T * config.channels));
    head.backward(dhidden.data(), head_grads(), head_params());
    model.backward_hidden(dhidden.data());
  }
};

// Each tensor of the flat parameters: the GPT's views, then the head's weight and bias.
std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> tensors(Classifier& c) {
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> out;
  const float* base = c.model.parameters_flat().data();
  for (const ParameterView& v : c.model.parameter_views())
    out.push_back({v.name, {static_cast<std::size_t>(v.param - base), static_cast<std::size_t>(v.numel)}});
  const std::size_t head = c.model.parameters_flat().size() - static_cast<std::size_t>(c.shape.parameter_count());
  const auto weights = static_cast<std::size_t>(c.shape.classes * c.shape.channels);
  out.push_back({"head.weight", {head, weights}});
  out.push_back({"head.bias", {head + weights, static_cast<std::size_t>(c.shape.classes)}});
  return out;
}

TEST(GptSequenceClassifier, GradientMatchesFiniteDifferencesInEveryTensor) {
  Classifier c;
  c.gradient();
  const std::vector<float> gradient(c.model.gradients_flat().begin(), c.model.gradients_flat().end());
  const std::span<float> p = c.model.parameters_flat();
  const std::vector<float> start(p.begin(), p.end());
  const CounterRng direction(7, 3);
  for (const auto& [name, range] : tensors(c)) {
    const auto [offset, numel] = range;
    // a unit direction v in this tensor, half along the analytic gradient (so the derivative is
    // well above rounding in a large tensor) and half random (so a gradient wrong in direction
    // shows as well as one wrong in size); the analytic derivative is gradient · v
    std::vector<double> v(numel);
    double random_norm = 0, gradient_norm = 0, norm = 0, analytic = 0;
    for (std::size_t i = 0; i < numel; ++i) {
      v[i] = direction.normal(offset + i);
      random_norm += v[i] * v[i];
      gradient_norm += static_cast<double>(gradient[offset + i]) * gradient[offset + i];
    }
    ASSERT_GT(gradient_norm, 0) << name << ": no gradient at all";
    for (std::size_t i = 0; i < numel; ++i) {
      v[i] = v[i] / std::sqrt(random_norm) + gradient[offset + i] / std::sqrt(gradient_norm);
      norm += v[i] * v[i];
    }
    for (std::size_t i = 0; i < numel; ++i) analytic += gradient[offset + i] * (v[i] /= std::sqrt(norm));
    const double h = 1e-2;
    const auto loss_at = [&](double step) {
      for (std::size_t i = 0; i < numel; ++i) p[offset + i] = static_cast<float>(start[offset + i] + step * v[i]);
      const double l = c.loss();
      std::copy(start.begin(), start.end(), p.begin());
      return l;
    };
    const double numeric = (loss_at(h) - loss_at(-h)) / (2 * h);
    EXPECT_NEAR(analytic, numeric, 2e-3 * std::abs(numeric) + 5e-5) << name;
    EXPECT_GT(std::abs(numeric), 1e-3) << name << ": too flat a direction to test anything";
  }
}

TEST(GptSequenceClassifier, PaddingPastALengthChangesNothing) {
  Classifier c;
  const double before = c.loss();
  c.tokens[1 * T + 4] = (c.tokens[1 * T + 4] + 1) % 256;  // row 1 has length 3
  c.tokens[2 * T + 1] = (c.tokens[2 * T + 1] + 7) % 256;  // row 2 has length 1
  EXPECT_EQ(c.loss(), before);
  c.tokens[1 * T + 2] = (c.tokens[1 * T + 2] + 1) % 256;  // a real token of row 1 does change it
  EXPECT_NE(c.loss(), before);
}

TEST(GptSequenceClassifier, StartsNearLogTwoAtTheGptInitialisation) {
  Classifier c;
  c.model.init_weights(1);
  classifier_head_init(c.model.appended_parameters_flat().data(), c.shape, 1, kParameterTensorCount);
  EXPECT_NEAR(c.loss(), std::log(2.0), 0.02);
}

}  // namespace
}  // namespace sb::gpt
