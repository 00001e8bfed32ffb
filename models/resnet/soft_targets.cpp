// SPDX-License-Identifier: Apache-2.0
#include "models/resnet/soft_targets.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sb::resnet {

namespace {

// softmax(x / T) of one row, in double.
void softmax_row(const float* x, double T, std::int64_t classes, std::vector<double>& out) {
  out.resize(static_cast<std::size_t>(classes));
  double largest = -INFINITY;
  for (std::int64_t j = 0; j < classes; ++j) largest = std::max(largest, static_cast<double>(x[j]) / T);
  double sum = 0;
  for (std::int64_t j = 0; j < classes; ++j) sum += out[j] = std::exp(static_cast<double>(x[j]) / T - largest);
  for (double& p : out) p /= sum;
}

}  // namespace

double soft_target_loss_sum(const float* s, const SoftTargets& t, std::int64_t N, std::int64_t classes) {
  std::vector<double> p, q;
  double total = 0;
  for (std::int64_t i = 0; i < N; ++i) {
    softmax_row(s + i * classes, t.temperature, classes, p);
    softmax_row(t.teacher_logits + i * classes, t.temperature, classes, q);
    double kl = 0;
    for (std::int64_t j = 0; j < classes; ++j)
      if (q[j] > 0) kl += q[j] * (std::log(q[j]) - std::log(std::max(p[j], 1e-300)));
    total += kl * t.temperature * t.temperature;
  }
  return total;
}

void soft_target_backward(float* dlogits, const float* s, const SoftTargets& t, std::int64_t N,
                          std::int64_t classes, double scale) {
  std::vector<double> p, q;
  for (std::int64_t i = 0; i < N; ++i) {
    softmax_row(s + i * classes, t.temperature, classes, p);
    softmax_row(t.teacher_logits + i * classes, t.temperature, classes, q);
    float* d = dlogits + i * classes;
    for (std::int64_t j = 0; j < classes; ++j)
      d[j] = static_cast<float>((1 - t.alpha) * d[j] + t.alpha * t.temperature * (p[j] - q[j]) * scale);
  }
}

}  // namespace sb::resnet
