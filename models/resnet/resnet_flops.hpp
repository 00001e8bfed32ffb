// SPDX-License-Identifier: Apache-2.0
// FLOPs of one ResNet training step, the single definition shared by the trainer's MFU and the
// cost model. Leaves out element-wise work (BatchNorm, ReLU, residual adds, pools, optimizer).
#pragma once

#include <cstdint>

#include "models/resnet/resnet_config.hpp"

namespace sb::resnet {

// Forward FLOPs of N images, a multiply-add counted as 2 FLOPs, convolutions and the linear
// head only (ResnetLayer::forward_flops):
//   conv     2·N·OC·OH·OW·C·KH·KW   (no bias)
//   linear   2·N·C·OC               (the bias add left out)
// BatchNorm, ReLU, residual adds and the pools are bandwidth-bound and left out: roughly 2%
// of the total for resnet-mini (about 8 FLOPs per BatchNorm output element). Half of this
// figure is the multiply-add count that torchvision lists as "GFLOPS" per 224² image:
// 1,814,073,344 for resnet-18 (1.81), 4,089,184,256 for resnet-50 (4.09).
inline double resnet_forward_flops(const ResnetConfig& config, std::int64_t N) {
  double flops = 0.0;
  for (const auto& layer : resnet_layers(config)) flops += layer.forward_flops(N);
  return flops;
}

// Forward + backward = 3 × forward: the backward of each convolution and linear layer is
// two products of the forward's size, the gradients of the input and of the weight. The
// stem's input gradient, which the model skips, is counted anyway as in the usual 3× rule
// (0.2% of the step for resnet-mini).
inline double resnet_training_flops(const ResnetConfig& config, std::int64_t N) {
  return 3.0 * resnet_forward_flops(config, N);
}

}  // namespace sb::resnet
