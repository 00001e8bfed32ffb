// SPDX-License-Identifier: Apache-2.0
// A sequence-classification head on the GPT's final hidden states (after the final LayerNorm):
// the mean over each sequence's real tokens, a linear layer to K classes, and the mean
// cross-entropy. fp32 on the host, plain loops: the head is K·(C + 1) parameters and (B, K)
// logits, nothing next to the transformer. Leaves out the transformer (gpt.hpp), other
// poolings and class weighting.
#pragma once

#include <cstdint>
#include <vector>

namespace sb::gpt {

struct ClassifierHeadShape {
  std::int64_t channels = 0;  // C
  std::int64_t classes = 0;   // K
  std::int64_t parameter_count() const { return classes * channels + classes; }
};

// Views into a flat run of parameter_count() floats: weight (K, C) then bias (K).
struct ClassifierHeadTensors {
  float* weight;
  float* bias;
};
ClassifierHeadTensors classifier_head_views(float* flat, const ClassifierHeadShape& shape);

// weight normal(0, 0.02) (CounterRng(seed, stream), element i draws index i), bias zero: the
// GPT's initialisation, as a tensor after its own.
void classifier_head_init(float* flat, const ClassifierHeadShape& shape, std::uint64_t seed, std::uint64_t stream);

class SequenceClassifierHead {
 public:
  SequenceClassifierHead(ClassifierHeadShape shape, std::int64_t max_batch);

  // hidden (B, T, C), lengths (B) in [1, T]: row b pools positions [0, lengths[b]) (the rest
  // is padding; the GPT is causal, so real positions never see it). logits (B, K) =
  // pooled (B, C) · weight (K, C)ᵀ + bias. Returns the mean cross-entropy over the B rows
  // against labels (B) in [0, K), or NaN when labels is nullptr (logits only).
  float forward(const float* hidden, const std::int32_t* lengths, const std::int32_t* labels, std::int64_t B,
                std::int64_t T, const ClassifierHeadTensors& params);
  const float* logits() const { return logits_.data(); }  // (B, K) of the last forward
  // The class with the largest logit of row b (the first on ties).
  std::int32_t predicted(std::int64_t b) const;

  // Gradient of the last forward's mean loss × loss_scale: accumulates into grads (weight,
  // bias) and writes dhidden (B, T, C) (zero at padding positions).
  void backward(float* dhidden, const ClassifierHeadTensors& grads, const ClassifierHeadTensors& params,
                double loss_scale = 1.0);

 private:
  ClassifierHeadShape shape_;
  std::int64_t max_batch_, B_ = 0, T_ = 0;
  bool has_labels_ = false;
  std::vector<float> pooled_, logits_, probs_;  // (B, C), (B, K), (B, K)
  std::vector<std::int32_t> lengths_, labels_;  // (B), of the last forward
};

}  // namespace sb::gpt
