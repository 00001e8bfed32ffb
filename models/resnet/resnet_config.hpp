// SPDX-License-Identifier: Apache-2.0
// ResNet model shapes: named configs, the block and layer lists that the model and the cost
// model share, and the exact parameter count. Leaves out the model (resnet.hpp) and FLOPs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sb::resnet {

enum class ResnetBlock { basic, bottleneck };

struct ResnetConfig {
  std::string name;
  std::int64_t image_channels = 0;  // 1 (MNIST) or 3 (ImageNet)
  std::int64_t image_size = 0;      // H = W: 28 or 224
  std::int64_t classes = 0;
  std::int64_t stem_channels = 0;
  std::int64_t stem_kernel = 0;     // 3 (stride 1) or 7 (stride 2); pad = kernel / 2
  std::int64_t stem_stride = 0;
  bool stem_maxpool = false;        // 3×3, stride 2, pad 1 max pool after the stem (ImageNet)
  ResnetBlock block = ResnetBlock::basic;
  std::vector<std::int64_t> stage_blocks;    // blocks per stage, e.g. {2, 2, 2}
  std::vector<std::int64_t> stage_channels;  // width per stage; a bottleneck outputs 4×
  bool spec_only = false;  // shapes for the cost model only: no trainable model
};

// resnet-mini (28×28×1, 10 classes, trainable); resnet-18 and resnet-50 (torchvision's
// ImageNet shapes, spec only). Throws UserError listing the known names on any other.
ResnetConfig resnet_config_by_name(std::string_view name);
std::vector<std::string> resnet_config_names();

// Throws UserError naming the field at fault: sizes positive, one width per stage.
void validate_resnet_config(const ResnetConfig& config);

// One residual block. Basic: conv3×3 (stride) → BN → ReLU → conv3×3 → BN. Bottleneck
// (torchvision v1.5, stride on the 3×3): conv1×1 → BN → ReLU → conv3×3 (stride) → BN →
// ReLU → conv1×1 (4× width) → BN. Then + shortcut and ReLU; the shortcut is a 1×1 conv
// (stride) + BN when the stride or the channel count changes, else the identity.
struct ResnetBlockShape {
  std::string name;                 // "stage2.0": stage from 1, block from 0
  std::int64_t in_channels = 0;     // IC
  std::int64_t width = 0;           // channels inside the block
  std::int64_t out_channels = 0;    // OC = width (basic) or 4·width (bottleneck)
  std::int64_t stride = 1;          // 2 at the start of every stage but the first
  std::int64_t in_size = 0;         // H = W of the input
  std::int64_t out_size = 0;        // OH = OW of the output
  bool shortcut_conv = false;
};

// Spatial size of the stem's output (after the max pool when there is one).
std::int64_t resnet_stem_output_size(const ResnetConfig& config);
std::vector<ResnetBlockShape> resnet_blocks(const ResnetConfig& config);

enum class LayerKind { conv2d, batchnorm2d, maxpool2d, global_avgpool, linear };

// One layer of the network in execution order (the shortcut after the block's main path),
// with its input and output shapes per image. Convolutions have no bias (torchvision).
struct ResnetLayer {
  std::string name;  // "stem.conv", "stage2.0.shortcut.bn", "fc"
  LayerKind kind = LayerKind::conv2d;
  std::int64_t in_channels = 0, in_size = 0;    // C, H = W
  std::int64_t out_channels = 0, out_size = 0;  // OC, OH = OW
  std::int64_t kernel = 1, stride = 1, pad = 0;

  // conv OC·C·K², BatchNorm 2C (weight, bias; running statistics are not parameters),
  // linear OC·C + OC, pools 0.
  std::int64_t parameter_count() const;
  // conv 2·N·OC·OH·OW·C·K², linear 2·N·C·OC; BatchNorm, pools and ReLU count 0.
  double forward_flops(std::int64_t N) const;
};
std::vector<ResnetLayer> resnet_layers(const ResnetConfig& config);

// Σ layer parameter counts: resnet-mini 174,970; resnet-18 11,689,512; resnet-50
// 25,557,032 (torchvision's counts).
std::int64_t resnet_parameter_count(const ResnetConfig& config);
// Σ channels over the BatchNorm layers: the running mean and variance hold this many each.
std::int64_t resnet_batchnorm_channels(const ResnetConfig& config);

}  // namespace sb::resnet
