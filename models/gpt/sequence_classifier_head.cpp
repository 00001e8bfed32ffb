// SPDX-License-Identifier: Apache-2.0
// Mean-pooled linear classifier on GPT hidden states: forward, cross-entropy and backward.
#include "models/gpt/sequence_classifier_head.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/check.hpp"
#include "core/rng.hpp"

namespace sb::gpt {

using i64 = std::int64_t;

ClassifierHeadTensors classifier_head_views(float* flat, const ClassifierHeadShape& shape) {
  return {flat, flat + shape.classes * shape.channels};
}

void classifier_head_init(float* flat, const ClassifierHeadShape& shape, std::uint64_t seed, std::uint64_t stream) {
  const CounterRng rng(seed, stream);
  const ClassifierHeadTensors t = classifier_head_views(flat, shape);
  for (i64 i = 0; i < shape.classes * shape.channels; ++i)
    t.weight[i] = static_cast<float>(0.02 * rng.normal(static_cast<std::uint64_t>(i)));
  std::fill_n(t.bias, shape.classes, 0.0f);
}

SequenceClassifierHead::SequenceClassifierHead(ClassifierHeadShape shape, i64 max_batch)
    : shape_(shape),
      max_batch_(max_batch),
      pooled_(static_cast<std::size_t>(max_batch * shape.channels)),
      logits_(static_cast<std::size_t>(max_batch * shape.classes)),
      probs_(logits_.size()),
      lengths_(static_cast<std::size_t>(max_batch)),
      labels_(static_cast<std::size_t>(max_batch)) {
  SB_CHECK(shape.channels > 0 && shape.classes > 1 && max_batch > 0, "classifier head: C {}, K {}, batch {}",
           shape.channels, shape.classes, max_batch);
}

float SequenceClassifierHead::forward(const float* hidden, const std::int32_t* lengths, const std::int32_t* labels,
                                      i64 B, i64 T, const ClassifierHeadTensors& params) {
  SB_CHECK(B >= 1 && B <= max_batch_, "classifier head: B = {} outside [1, {}]", B, max_batch_);
  const i64 C = shape_.channels, K = shape_.classes;
  B_ = B;
  T_ = T;
  has_labels_ = labels != nullptr;
  double loss = 0;
  for (i64 b = 0; b < B; ++b) {
    const i64 n = lengths[b];
    SB_CHECK(n >= 1 && n <= T, "classifier head: length {} of row {} outside [1, {}]", n, b, T);
    SB_CHECK(!labels || (labels[b] >= 0 && labels[b] < K), "classifier head: label {} of row {} outside [0, {})",
             labels ? labels[b] : 0, b, K);
    lengths_[static_cast<std::size_t>(b)] = static_cast<std::int32_t>(n);
    labels_[static_cast<std::size_t>(b)] = labels ? labels[b] : 0;
    float* pooled = pooled_.data() + b * C;  // (C) mean of hidden[b, 0..n)
    std::fill_n(pooled, C, 0.0f);
    for (i64 t = 0; t < n; ++t) {
      const float* h = hidden + (b * T + t) * C;
      for (i64 c = 0; c < C; ++c) pooled[c] += h[c];
    }
    for (i64 c = 0; c < C; ++c) pooled[c] /= static_cast<float>(n);
    float* logits = logits_.data() + b * K;
    float* probs = probs_.data() + b * K;
    float largest = -std::numeric_limits<float>::infinity();
    for (i64 k = 0; k < K; ++k) {
      double z = params.bias[k];
      for (i64 c = 0; c < C; ++c) z += static_cast<double>(params.weight[k * C + c]) * pooled[c];
      logits[k] = static_cast<float>(z);
      largest = std::max(largest, logits[k]);
    }
    double sum = 0;
    for (i64 k = 0; k < K; ++k) sum += std::exp(static_cast<double>(logits[k] - largest));
    for (i64 k = 0; k < K; ++k) probs[k] = static_cast<float>(std::exp(static_cast<double>(logits[k] - largest)) / sum);
    if (labels) loss += std::log(sum) - static_cast<double>(logits[labels[b]] - largest);
  }
  return labels ? static_cast<float>(loss / static_cast<double>(B)) : std::numeric_limits<float>::quiet_NaN();
}

std::int32_t SequenceClassifierHead::predicted(i64 b) const {
  SB_CHECK(b >= 0 && b < B_, "classifier head: row {} outside the last forward's {}", b, B_);
  const float* row = logits_.data() + b * shape_.classes;
  return static_cast<std::int32_t>(std::max_element(row, row + shape_.classes) - row);
}

void SequenceClassifierHead::backward(float* dhidden, const ClassifierHeadTensors& grads,
                                      const ClassifierHeadTensors& params, double loss_scale) {
  SB_CHECK(has_labels_ && B_ > 0, "classifier head: backward needs a forward with labels first");
  const i64 B = B_, T = T_, C = shape_.channels, K = shape_.classes;
  std::vector<float> dpooled(static_cast<std::size_t>(C));
  for (i64 b = 0; b < B; ++b) {
    std::fill(dpooled.begin(), dpooled.end(), 0.0f);
    const float* pooled = pooled_.data() + b * C;
    for (i64 k = 0; k < K; ++k) {  // d(mean CE)/d(logit) = (p - onehot) / B
      const double dlogit = (probs_[static_cast<std::size_t>(b * K + k)] - (labels_[static_cast<std::size_t>(b)] == k)) *
                            loss_scale / static_cast<double>(B);
      grads.bias[k] += static_cast<float>(dlogit);
      for (i64 c = 0; c < C; ++c) {
        grads.weight[k * C + c] += static_cast<float>(dlogit * pooled[c]);
        dpooled[static_cast<std::size_t>(c)] += static_cast<float>(dlogit * params.weight[k * C + c]);
      }
    }
    const i64 n = lengths_[static_cast<std::size_t>(b)];
    for (i64 t = 0; t < T; ++t) {
      float* dh = dhidden + (b * T + t) * C;
      for (i64 c = 0; c < C; ++c) dh[c] = t < n ? dpooled[static_cast<std::size_t>(c)] / static_cast<float>(n) : 0.0f;
    }
  }
}

}  // namespace sb::gpt
