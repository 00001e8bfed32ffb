// SPDX-License-Identifier: Apache-2.0
// Knowledge distillation's loss (models/resnet/soft_targets.hpp) against finite differences
// of its own definition, computed here in double: (1 − α)·CE + α·T²·KL(softmax(t/T) ‖
// softmax(s/T)), averaged over the batch; a teacher equal to the student adds nothing and
// α = 0 leaves the cross-entropy gradient as it was.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "models/resnet/soft_targets.hpp"

namespace sb::resnet {
namespace {

constexpr std::int64_t N = 3, C = 5;

std::vector<double> softmax(const double* x, double T) {
  std::vector<double> p(C);
  double largest = -INFINITY, sum = 0;
  for (int j = 0; j < C; ++j) largest = std::max(largest, x[j] / T);
  for (int j = 0; j < C; ++j) sum += p[j] = std::exp(x[j] / T - largest);
  for (double& v : p) v /= sum;
  return p;
}

// The mean distillation loss, straight from its definition.
double mean_loss(const std::vector<double>& s, const std::vector<double>& t, const std::vector<int>& y, double T,
                 double alpha) {
  double total = 0;
  for (int i = 0; i < N; ++i) {
    const auto p1 = softmax(&s[i * C], 1), pT = softmax(&s[i * C], T), qT = softmax(&t[i * C], T);
    double kl = 0;
    for (int j = 0; j < C; ++j) kl += qT[j] * std::log(qT[j] / pT[j]);
    total += (1 - alpha) * -std::log(p1[y[i]]) + alpha * T * T * kl;
  }
  return total / N;
}

struct Batch {
  std::vector<float> s, t;
  std::vector<int> y = {1, 4, 0};
};
Batch random_batch() {
  Batch b;
  const CounterRng rng(11, 3);
  for (int i = 0; i < N * C; ++i) {
    b.s.push_back(static_cast<float>(2 * rng.normal(i)));
    b.t.push_back(static_cast<float>(3 * rng.normal(1000 + i)));
  }
  return b;
}

// The cross-entropy gradient the model's kernel leaves in dlogits: (softmax(s) − onehot)·scale.
std::vector<float> cross_entropy_gradient(const Batch& b, double scale) {
  std::vector<float> d(N * C);
  for (int i = 0; i < N; ++i) {
    std::vector<double> row(b.s.begin() + i * C, b.s.begin() + (i + 1) * C);
    const auto p = softmax(row.data(), 1);
    for (int j = 0; j < C; ++j) d[i * C + j] = static_cast<float>((p[j] - (j == b.y[i])) * scale);
  }
  return d;
}

TEST(SoftTargets, GradientMatchesFiniteDifferencesOfTheLoss) {
  const Batch b = random_batch();
  const double T = 3, alpha = 0.7;
  std::vector<float> d = cross_entropy_gradient(b, 1.0 / N);
  soft_target_backward(d.data(), b.s.data(), {b.t.data(), T, alpha}, N, C, 1.0 / N);
  std::vector<double> s(b.s.begin(), b.s.end()), t(b.t.begin(), b.t.end());
  for (int k = 0; k < N * C; ++k) {
    const double h = 1e-5;
    std::vector<double> up = s, down = s;
    up[k] += h;
    down[k] -= h;
    const double numeric = (mean_loss(up, t, b.y, T, alpha) - mean_loss(down, t, b.y, T, alpha)) / (2 * h);
    EXPECT_NEAR(d[k], numeric, 1e-5) << "logit " << k;
  }
  // the loss sum the model mixes in: α·Σ T²·KL, with (1 − α)·ΣCE, is N × the mean loss
  double cross_entropy = 0;
  for (int i = 0; i < N; ++i) cross_entropy -= std::log(softmax(&s[i * C], 1)[b.y[i]]);
  const double mixed = (1 - alpha) * cross_entropy + alpha * soft_target_loss_sum(b.s.data(), {b.t.data(), T, alpha}, N, C);
  EXPECT_NEAR(mixed / N, mean_loss(s, t, b.y, T, alpha), 1e-6);
}

TEST(SoftTargets, TeacherEqualToStudentAddsNothingAndAlphaZeroKeepsCrossEntropy) {
  const Batch b = random_batch();
  EXPECT_NEAR(soft_target_loss_sum(b.s.data(), {b.s.data(), 2.0, 0.5}, N, C), 0.0, 1e-9);
  const std::vector<float> ce = cross_entropy_gradient(b, 0.25);
  std::vector<float> d = ce;
  soft_target_backward(d.data(), b.s.data(), {b.t.data(), 4.0, 0.0}, N, C, 0.25);
  EXPECT_EQ(d, ce);
}

}  // namespace
}  // namespace sb::resnet
