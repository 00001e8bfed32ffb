// SPDX-License-Identifier: Apache-2.0
// BatchNorm folded into the preceding convolution (see batchnorm_folding.hpp).
#include "compress/batchnorm_folding.hpp"

#include <cmath>

#include "core/check.hpp"

namespace sb::compress {

FoldedConv fold_batchnorm(const float* conv_weight, const float* conv_bias, std::int64_t OC,
                          std::int64_t K, const float* gamma, const float* beta,
                          const float* running_mean, const float* running_var, double eps) {
  FoldedConv f;
  f.weight.resize(static_cast<std::size_t>(OC * K));
  f.bias.resize(static_cast<std::size_t>(OC));
  for (std::int64_t o = 0; o < OC; ++o) {
    SB_CHECK(running_var[o] >= 0.0f, "fold_batchnorm: negative running variance at channel {}", o);
    const double factor = static_cast<double>(gamma[o]) / std::sqrt(running_var[o] + eps);
    for (std::int64_t i = 0; i < K; ++i)
      f.weight[o * K + i] = static_cast<float>(conv_weight[o * K + i] * factor);
    const double b = conv_bias ? conv_bias[o] : 0.0;
    f.bias[o] = static_cast<float>(beta[o] + (b - running_mean[o]) * factor);
  }
  return f;
}

}  // namespace sb::compress
