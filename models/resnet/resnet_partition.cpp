// SPDX-License-Identifier: Apache-2.0
// ResNet pipeline units from the layer list (resnet_config.hpp), and their stage splits.
#include "models/resnet/resnet_partition.hpp"

#include <fmt/ranges.h>

#include <numeric>

#include "core/balanced_partition.hpp"
#include "core/check.hpp"

namespace sb::resnet {

using i64 = std::int64_t;

std::vector<ResnetUnit> resnet_pipeline_units(const ResnetConfig& config) {
  validate_resnet_config(config);
  const std::vector<ResnetBlockShape> blocks = resnet_blocks(config);
  std::vector<ResnetUnit> units;
  const i64 S = config.image_size, stem = resnet_stem_output_size(config);
  units.push_back({"stem", 0.0, config.image_channels * S * S, config.stem_channels * stem * stem});
  for (const ResnetBlockShape& b : blocks) {
    units.push_back({b.name, 0.0, b.in_channels * b.in_size * b.in_size,
                     b.out_channels * b.out_size * b.out_size});
  }
  const ResnetBlockShape& last = blocks.back();
  units.push_back({"head", 0.0, last.out_channels * last.out_size * last.out_size, config.classes});
  // Each layer belongs to the unit its name starts with: "stem.", "<block>.", else the head.
  for (const ResnetLayer& layer : resnet_layers(config)) {
    std::size_t u = units.size() - 1;
    for (std::size_t i = 0; i + 1 < units.size(); ++i) {
      if (layer.name.starts_with(units[i].name + ".")) u = i;
    }
    units[u].forward_flops_per_image += layer.forward_flops(1);
  }
  return units;
}

std::vector<ResnetPartition> resnet_stage_partitions(const ResnetConfig& config,
                                                     std::span<const i64> units_per_stage) {
  const auto units = static_cast<i64>(resnet_pipeline_units(config).size());
  const i64 total = std::accumulate(units_per_stage.begin(), units_per_stage.end(), i64{0});
  bool positive = !units_per_stage.empty();
  for (i64 count : units_per_stage) positive = positive && count >= 1;
  SB_USER_CHECK(positive && total == units,
                "the pipeline split of {} must give each stage at least one layer and {} in all "
                "(the stem, {} blocks, the head), got [{}]",
                config.name, units, units - 2, fmt::join(units_per_stage, ", "));
  std::vector<ResnetPartition> partitions;
  i64 first = 0;
  for (i64 count : units_per_stage) {
    partitions.push_back({first, first + count});
    first += count;
  }
  return partitions;
}

std::vector<i64> resnet_balanced_units_per_stage(const ResnetConfig& config, int stages) {
  std::vector<double> costs;
  for (const ResnetUnit& unit : resnet_pipeline_units(config)) costs.push_back(unit.forward_flops_per_image);
  SB_USER_CHECK(stages >= 1 && stages <= static_cast<int>(costs.size()),
                "{} has {} pipeline layers (the stem, {} blocks, the head): it cannot be split "
                "into {} stages",
                config.name, costs.size(), costs.size() - 2, stages);
  return balanced_contiguous_partition(costs, stages);
}

}  // namespace sb::resnet
