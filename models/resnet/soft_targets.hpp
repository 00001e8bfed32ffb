// SPDX-License-Identifier: Apache-2.0
// Knowledge distillation's loss on a classifier's logits (Hinton et al. 2015): the mean over
// the batch of (1 − α)·CE(s, y) + α·T²·KL(softmax(t/T) ‖ softmax(s/T)), s the student's logits,
// t the teacher's, T the temperature, α the mixing weight; the T² keeps the soft term's
// gradient on the scale of the hard one's. Plain loops over (N, classes): the head is tiny.
// Leaves out the teacher's forward (the training task) and the cross-entropy kernels.
#pragma once

#include <cstdint>

namespace sb::resnet {

struct SoftTargets {
  const float* teacher_logits = nullptr;  // (N, classes); null: plain cross-entropy
  double temperature = 1, alpha = 0;
};

// Σ_i KL_i·T² over the batch, s student logits (N, classes) (the caller mixes it with CE).
double soft_target_loss_sum(const float* student_logits, const SoftTargets& targets, std::int64_t N,
                            std::int64_t classes);

// dlogits (N, classes): scales the cross-entropy gradient already there by (1 − α) and adds
// α·T·(softmax(s/T) − softmax(t/T))·scale, scale the per-sample factor of the mean loss
// (loss scale / N), so that dlogits is d(mean distillation loss)/d(logits)·loss scale.
void soft_target_backward(float* dlogits, const float* student_logits, const SoftTargets& targets,
                          std::int64_t N, std::int64_t classes, double scale);

}  // namespace sb::resnet
