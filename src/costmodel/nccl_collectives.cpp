// SPDX-License-Identifier: Apache-2.0
// The per-algorithm times of nccl_collectives.hpp and NCCL's choice among them.
#include "costmodel/nccl_collectives.hpp"

#include <algorithm>
#include <cmath>

#include "core/check.hpp"
#include "parallel/bandwidth.hpp"

namespace sb::costmodel {

std::string to_string(NcclAlgorithm algorithm) {
  switch (algorithm) {
    case NcclAlgorithm::ring: return "ring";
    case NcclAlgorithm::tree: return "tree";
    case NcclAlgorithm::nvls: return "nvls";
  }
  return "ring";
}

CollectiveGroup collective_group(int ranks, int stride, int devices_per_node) {
  SB_CHECK(ranks >= 1 && stride >= 1 && devices_per_node >= 1, "a group of {} ranks {} apart on nodes of {}",
           ranks, stride, devices_per_node);
  CollectiveGroup g;
  g.ranks = ranks;
  g.devices_per_node = devices_per_node;
  const int per_node = std::clamp(devices_per_node / stride, 1, ranks);
  g.nodes = (ranks + per_node - 1) / per_node;
  return g;
}

namespace {

const std::optional<NcclAlgorithmCost>& figure(NcclAlgorithm algorithm, const NcclLevel& level) {
  switch (algorithm) {
    case NcclAlgorithm::tree: return level.tree;
    case NcclAlgorithm::nvls: return level.nvls;
    case NcclAlgorithm::ring: break;
  }
  return level.ring;
}

// The bus bandwidth the group gets: inside a node the level's figure; across nodes the inter
// figure per rank on the node times the group's ranks there, never above what the node reaches.
double group_bus_bandwidth(const NcclAlgorithmCost& intra, const NcclAlgorithmCost* inter, const CollectiveGroup& g) {
  if (g.nodes == 1 || inter == nullptr) return intra.bus_bandwidth;
  double b = inter->bus_bandwidth * static_cast<double>(g.ranks_per_node());
  if (inter->max_bus_bandwidth) b = std::min(b, *inter->max_bus_bandwidth);
  return std::min(b, intra.bus_bandwidth);
}

}  // namespace

std::optional<double> nccl_algorithm_seconds(NcclAlgorithm algorithm, parallel::Collective collective,
                                             double bytes, const CollectiveGroup& g, const NcclLevel& intra,
                                             const NcclLevel& inter) {
  SB_CHECK(g.ranks >= 1 && g.nodes >= 1 && bytes >= 0, "collective of {} bytes over {} ranks on {} nodes", bytes,
           g.ranks, g.nodes);
  const bool all_reduce = collective == parallel::Collective::all_reduce;
  if (algorithm != NcclAlgorithm::ring && !all_reduce) return std::nullopt;
  if (algorithm == NcclAlgorithm::nvls && (g.nodes > 1 || g.ranks != g.devices_per_node)) return std::nullopt;
  const auto& in = figure(algorithm, intra);
  const auto& out = figure(algorithm, inter);
  if (!in || (g.nodes > 1 && !out)) return std::nullopt;
  if (g.ranks == 1) return 0.0;
  const NcclAlgorithmCost* across = g.nodes > 1 ? &*out : nullptr;
  const double bandwidth = group_bus_bandwidth(*in, across, g);
  SB_CHECK(bandwidth > 0, "a {} bus bandwidth of {} bytes/s", to_string(algorithm), bandwidth);
  const double n = g.ranks, nodes = g.nodes, k = g.ranks_per_node();
  const double base = across ? across->base_latency : in->base_latency;
  const double alpha_out = across ? across->step_latency : 0.0;
  double latency = base;
  switch (algorithm) {
    case NcclAlgorithm::ring: {
      const double steps = all_reduce ? 2.0 * (n - 1) : n - 1;
      const double inter_steps = all_reduce ? 2.0 * (nodes - 1) : nodes - 1;
      latency += (steps - inter_steps) * in->step_latency + inter_steps * alpha_out;
      break;
    }
    case NcclAlgorithm::tree:
      latency += 2.0 * ((k - 1) * in->step_latency + std::ceil(std::log2(nodes)) * alpha_out);
      break;
    case NcclAlgorithm::nvls:
      latency += 2.0 * (k - 1) * in->step_latency;
      break;
  }
  return latency + parallel::bus_bandwidth_factor(collective, g.ranks) * bytes / bandwidth;
}

CollectiveTime nccl_collective(parallel::Collective collective, double bytes, const CollectiveGroup& g,
                               const NcclLevel& intra, const NcclLevel& inter) {
  CollectiveTime best;
  bool found = false;
  for (NcclAlgorithm a : {NcclAlgorithm::ring, NcclAlgorithm::tree, NcclAlgorithm::nvls}) {
    const std::optional<double> s = nccl_algorithm_seconds(a, collective, bytes, g, intra, inter);
    if (s && (!found || *s < best.seconds)) {
      best = {*s, a};
      found = true;
    }
  }
  SB_CHECK(found, "no NCCL algorithm figure for a {}-rank group on {} nodes", g.ranks, g.nodes);
  return best;
}

double nccl_p2p_seconds(double bytes, const NcclLevel& level) {
  SB_CHECK(level.ring && level.ring->bus_bandwidth > 0 && bytes >= 0, "a message of {} bytes without a ring figure",
           bytes);
  return level.ring->step_latency + bytes / level.ring->bus_bandwidth;
}

}  // namespace sb::costmodel
