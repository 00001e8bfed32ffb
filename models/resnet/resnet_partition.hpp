// SPDX-License-Identifier: Apache-2.0
// How a ResNet splits into pipeline stages: its units (the stem, each residual block, the head)
// with their modelled cost and message sizes, contiguous unit ranges, the FLOP-balanced split
// and the check of a hand-written one. Leaves out running a range (resnet.hpp) and moving
// activations between stages (src/train/pipeline_executor.hpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "models/resnet/resnet_config.hpp"

namespace sb::resnet {

// One unit of the pipeline split, in execution order: "stem" (conv, BatchNorm, ReLU; the
// max pool when there is one), each block ("stage1.0", ...), "head" (global average pool,
// linear, cross-entropy). Units are never split between stages.
struct ResnetUnit {
  std::string name;
  double forward_flops_per_image = 0;  // Σ ResnetLayer::forward_flops(1) of its layers
  std::int64_t in_floats = 0;          // per image: C·H·W of its input (the images for the stem)
  std::int64_t out_floats = 0;         // per image: C·H·W of its output (the logits for the head)
};
// resnet-mini: stem, 6 blocks, head.
std::vector<ResnetUnit> resnet_pipeline_units(const ResnetConfig& config);

inline constexpr std::int64_t kResnetAllUnits = -1;

// The units [first, end) of resnet_pipeline_units that one model instance holds. The default
// is the whole network.
struct ResnetPartition {
  std::int64_t first = 0;
  std::int64_t end = kResnetAllUnits;  // kResnetAllUnits: through the head
  bool operator==(const ResnetPartition&) const = default;
};

// The stage partitions of a split given as unit counts per stage (a hand override). UserError
// unless every count is positive and they sum to the number of units.
std::vector<ResnetPartition> resnet_stage_partitions(const ResnetConfig& config,
                                                     std::span<const std::int64_t> units_per_stage);

// Unit counts per stage that minimise the largest stage's modelled training FLOPs
// (resnet_flops.hpp: convolutions and the linear head). UserError unless
// 1 <= stages <= the number of units.
std::vector<std::int64_t> resnet_balanced_units_per_stage(const ResnetConfig& config, int stages);

}  // namespace sb::resnet
