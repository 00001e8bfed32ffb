// SPDX-License-Identifier: Apache-2.0
// Named ResNet configs, validation, and the block and layer lists derived from a config.
// Leaves out anything that allocates: the model builds its views from these lists.
#include "kernels/kernels.hpp"
#include "models/resnet/resnet_config.hpp"

#include <array>
#include <utility>

#include "core/check.hpp"

namespace sb::resnet {

using i64 = std::int64_t;

namespace {

const std::vector<ResnetConfig>& named_configs() {
  using enum ResnetBlock;
  static const std::vector<ResnetConfig> configs{
      {"resnet-mini", 1, 28, 10, 16, 3, 1, false, basic, {2, 2, 2}, {16, 32, 64}, false},
      // a student for distillation from resnet-mini: one block per stage, half the width
      {"resnet-micro", 1, 28, 10, 8, 3, 1, false, basic, {1, 1, 1}, {8, 16, 32}, false},
      {"resnet-18", 3, 224, 1000, 64, 7, 2, true, basic, {2, 2, 2, 2}, {64, 128, 256, 512}, true},
      {"resnet-50", 3, 224, 1000, 64, 7, 2, true, bottleneck, {3, 4, 6, 3}, {64, 128, 256, 512},
       true},
  };
  return configs;
}

// (size + 2·pad - kernel) / stride + 1, as PyTorch's Conv2d and MaxPool2d.
i64 conv_output_size(i64 size, i64 kernel, i64 stride, i64 pad) {
  return (size + 2 * pad - kernel) / stride + 1;
}

constexpr i64 kBottleneckExpansion = 4;

}  // namespace

std::vector<std::string> resnet_config_names() {
  std::vector<std::string> names;
  for (const auto& config : named_configs()) names.push_back(config.name);
  return names;
}

ResnetConfig resnet_config_by_name(std::string_view name) {
  for (const auto& config : named_configs()) {
    if (config.name == name) return config;
  }
  throw UserError(fmt::format("unknown model '{}' (known: {})", name,
                              fmt::join(resnet_config_names(), ", ")));
}

void validate_resnet_config(const ResnetConfig& config) {
  const std::array<std::pair<const char*, i64>, 6> sizes{{
      {"image_channels", config.image_channels},
      {"image_size", config.image_size},
      {"classes", config.classes},
      {"stem_channels", config.stem_channels},
      {"stem_kernel", config.stem_kernel},
      {"stem_stride", config.stem_stride},
  }};
  for (const auto& [field, value] : sizes) {
    SB_USER_CHECK(value > 0, "resnet config '{}': {} must be positive, got {}", config.name, field,
                  value);
  }
  SB_USER_CHECK(!config.stage_blocks.empty(), "resnet config '{}': stage_blocks is empty",
                config.name);
  SB_USER_CHECK(config.stage_blocks.size() == config.stage_channels.size(),
                "resnet config '{}': stage_blocks has {} stages but stage_channels has {}",
                config.name, config.stage_blocks.size(), config.stage_channels.size());
  for (std::size_t s = 0; s < config.stage_blocks.size(); ++s) {
    SB_USER_CHECK(config.stage_blocks[s] > 0 && config.stage_channels[s] > 0,
                  "resnet config '{}': stage {} needs positive blocks and channels, got {} and {}",
                  config.name, s + 1, config.stage_blocks[s], config.stage_channels[s]);
  }
  SB_USER_CHECK(resnet_stem_output_size(config) >= 1, "resnet config '{}': image_size {} is too "
                "small for the stem", config.name, config.image_size);
  for (const auto& block : resnet_blocks(config)) {
    SB_USER_CHECK(block.out_size >= 1, "resnet config '{}': image_size {} shrinks to nothing by {}",
                  config.name, config.image_size, block.name);
  }
}

i64 resnet_stem_output_size(const ResnetConfig& config) {
  const i64 size = conv_output_size(config.image_size, config.stem_kernel, config.stem_stride,
                                    config.stem_kernel / 2);
  return config.stem_maxpool ? conv_output_size(size, 3, 2, 1) : size;
}

std::vector<ResnetBlockShape> resnet_blocks(const ResnetConfig& config) {
  const i64 expansion = config.block == ResnetBlock::bottleneck ? kBottleneckExpansion : 1;
  std::vector<ResnetBlockShape> blocks;
  i64 channels = config.stem_channels, size = resnet_stem_output_size(config);
  for (std::size_t s = 0; s < config.stage_blocks.size(); ++s) {
    for (i64 b = 0; b < config.stage_blocks[s]; ++b) {
      ResnetBlockShape block;
      block.name = fmt::format("stage{}.{}", s + 1, b);
      block.in_channels = channels;
      block.width = config.stage_channels[s];
      block.out_channels = expansion * block.width;
      block.stride = (s > 0 && b == 0) ? 2 : 1;
      block.in_size = size;
      block.out_size = conv_output_size(size, 3, block.stride, 1);
      block.shortcut_conv = block.stride != 1 || block.in_channels != block.out_channels;
      channels = block.out_channels;
      size = block.out_size;
      blocks.push_back(std::move(block));
    }
  }
  return blocks;
}

i64 ResnetLayer::parameter_count() const {
  switch (kind) {
    case LayerKind::conv2d: return out_channels * in_channels * kernel * kernel;
    case LayerKind::batchnorm2d: return 2 * in_channels;
    case LayerKind::linear: return out_channels * in_channels + out_channels;
    case LayerKind::maxpool2d:
    case LayerKind::global_avgpool: return 0;
  }
  return 0;
}

// The kernels' own count (kernels.hpp's work estimates) of the calls the layer makes.
double ResnetLayer::forward_flops(i64 N) const {
  switch (kind) {
    case LayerKind::conv2d:
      return kernels::conv2d_forward_work(N, in_channels, in_size, in_size, out_channels, kernel, kernel, stride, pad, 4)
          .flops;
    case LayerKind::linear:
      return kernels::matmul_forward_work(N, in_channels, out_channels, 4).flops;
    case LayerKind::batchnorm2d:
    case LayerKind::maxpool2d:
    case LayerKind::global_avgpool: return 0.0;
  }
  return 0.0;
}

std::vector<ResnetLayer> resnet_layers(const ResnetConfig& config) {
  std::vector<ResnetLayer> layers;
  const auto conv = [&](std::string name, i64 C, i64 size, i64 OC, i64 kernel, i64 stride) {
    const i64 pad = kernel / 2;
    layers.push_back({std::move(name), LayerKind::conv2d, C, size, OC,
                      conv_output_size(size, kernel, stride, pad), kernel, stride, pad});
    return layers.back().out_size;
  };
  const auto batchnorm = [&](std::string name, i64 C, i64 size) {
    layers.push_back({std::move(name), LayerKind::batchnorm2d, C, size, C, size, 1, 1, 0});
  };

  const i64 stem_size = conv("stem.conv", config.image_channels, config.image_size,
                             config.stem_channels, config.stem_kernel, config.stem_stride);
  batchnorm("stem.bn", config.stem_channels, stem_size);
  if (config.stem_maxpool) {
    layers.push_back({"stem.maxpool", LayerKind::maxpool2d, config.stem_channels, stem_size,
                      config.stem_channels, conv_output_size(stem_size, 3, 2, 1), 3, 2, 1});
  }
  for (const auto& b : resnet_blocks(config)) {
    const std::string& n = b.name;
    if (config.block == ResnetBlock::basic) {
      conv(n + ".conv1", b.in_channels, b.in_size, b.width, 3, b.stride);
      batchnorm(n + ".bn1", b.width, b.out_size);
      conv(n + ".conv2", b.width, b.out_size, b.out_channels, 3, 1);
      batchnorm(n + ".bn2", b.out_channels, b.out_size);
    } else {
      conv(n + ".conv1", b.in_channels, b.in_size, b.width, 1, 1);
      batchnorm(n + ".bn1", b.width, b.in_size);
      conv(n + ".conv2", b.width, b.in_size, b.width, 3, b.stride);
      batchnorm(n + ".bn2", b.width, b.out_size);
      conv(n + ".conv3", b.width, b.out_size, b.out_channels, 1, 1);
      batchnorm(n + ".bn3", b.out_channels, b.out_size);
    }
    if (b.shortcut_conv) {
      conv(n + ".shortcut.conv", b.in_channels, b.in_size, b.out_channels, 1, b.stride);
      batchnorm(n + ".shortcut.bn", b.out_channels, b.out_size);
    }
  }
  const ResnetBlockShape last = resnet_blocks(config).back();  // a copy: the vector is a temporary
  layers.push_back({"pool", LayerKind::global_avgpool, last.out_channels, last.out_size,
                    last.out_channels, 1, last.out_size, 1, 0});
  layers.push_back({"fc", LayerKind::linear, last.out_channels, 1, config.classes, 1, 1, 1, 0});
  return layers;
}

i64 resnet_parameter_count(const ResnetConfig& config) {
  i64 count = 0;
  for (const auto& layer : resnet_layers(config)) count += layer.parameter_count();
  return count;
}

i64 resnet_batchnorm_channels(const ResnetConfig& config) {
  i64 channels = 0;
  for (const auto& layer : resnet_layers(config)) {
    if (layer.kind == LayerKind::batchnorm2d) channels += layer.in_channels;
  }
  return channels;
}

}  // namespace sb::resnet
