// SPDX-License-Identifier: Apache-2.0
// Folding an eval-mode BatchNorm (running statistics) into the convolution before it:
// bn(conv(x)) = conv'(x) + b' with w'[o] = w[o]·γ[o]/√(var[o]+ε), b'[o] = β[o] - γ[o]·mean[o]/√(var[o]+ε)
// (+ the conv's own bias scaled alike). Computed in double, rounded once. Leaves out training-mode
// BatchNorm, which has no fixed statistics to fold.
#pragma once

#include <cstdint>
#include <vector>

namespace sb::compress {

struct FoldedConv {
  std::vector<float> weight;  // (OC, K)
  std::vector<float> bias;    // (OC)
};

// conv_weight (OC, K), conv_bias (OC) or nullptr, gamma/beta/running_mean/running_var (OC).
FoldedConv fold_batchnorm(const float* conv_weight, const float* conv_bias, std::int64_t OC,
                          std::int64_t K, const float* gamma, const float* beta,
                          const float* running_mean, const float* running_var, double eps);

}  // namespace sb::compress
