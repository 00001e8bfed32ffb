// SPDX-License-Identifier: Apache-2.0
// NCCL's collectives by algorithm (ring, tree, NVLink SHARP) and message size: each algorithm's
// time from the achieved bus bandwidth nccl-tests reports for it on a link level and NCCL's
// latency model (src/graph/tuning.cc: a base latency plus one latency per step), the algorithm
// chosen as NCCL's tuner chooses it, the smallest predicted time. Leaves out the LL and LL128
// protocols (they win below ~64 KiB; the collectives of a training step are megabytes), CollNet
// and IB SHARP, and which collectives a step calls (step_prediction).
#pragma once

#include <optional>
#include <string>

#include "parallel/comm_stats.hpp"

namespace sb::costmodel {

enum class NcclAlgorithm { ring, tree, nvls };
std::string to_string(NcclAlgorithm algorithm);

// One algorithm on one link level: bus_bandwidth is nccl-tests' busbw at large sizes (bytes/s);
// on the inter-node level it is per rank on the node (per NIC rail: a group with k ranks on each
// node gets k times it, at most max_bus_bandwidth when given). step_latency is NCCL's hwLat of a
// step over the level, base_latency its baseLat of a call, both in seconds.
struct NcclAlgorithmCost {
  double bus_bandwidth = 0;
  double step_latency = 0;
  double base_latency = 0;
  std::optional<double> max_bus_bandwidth;
};

// The algorithms a site's link level measured (links.<level>.nccl in a site profile). nvls is
// NVLink SHARP, the all-reduce offloaded to the NVSwitch, inside one node only.
struct NcclLevel {
  std::optional<NcclAlgorithmCost> ring, tree, nvls;
};

// The ranks of one communicator as the hardware places them: ranks over nodes, ranks/nodes on
// each node, devices_per_node the node's devices (an NVLS all-reduce needs the whole node).
struct CollectiveGroup {
  int ranks = 1;
  int nodes = 1;
  int devices_per_node = 1;
  int ranks_per_node() const { return ranks / nodes; }
};

// The group a communicator of `ranks` ranks that are `stride` apart in the rank order makes on
// nodes of devices_per_node devices (ranks numbered node by node).
CollectiveGroup collective_group(int ranks, int stride, int devices_per_node);

struct CollectiveTime {
  double seconds = 0;
  NcclAlgorithm algorithm = NcclAlgorithm::ring;
};

// The time of one algorithm, none when the site gives no figure for it on the levels the group
// uses or NCCL does not run it there (tree and NVLS are all-reduce only; NVLS one whole node):
//   ring   base + (s − s_inter)·α_intra + s_inter·α_inter + f·S/B
//          s = 2(n−1) all-reduce, n−1 reduce-scatter and all-gather; s_inter the same over nodes
//   tree   base + 2·((k−1)·α_intra + ⌈log2 N⌉·α_inter) + f·S/B
//   nvls   base + 2·(k−1)·α + f·S/B
// with f = bus_bandwidth_factor (parallel/bandwidth.hpp), n ranks, N nodes, k ranks per node,
// B the bus bandwidth of the slowest level the group crosses and α, base the algorithm's.
std::optional<double> nccl_algorithm_seconds(NcclAlgorithm algorithm, parallel::Collective collective,
                                             double bytes, const CollectiveGroup& group,
                                             const NcclLevel& intra, const NcclLevel& inter);

// The fastest algorithm the site measured (0 s, ring, for one rank). UserError-free: the caller
// checks that the level the group needs has a ring figure (every nccl block must).
CollectiveTime nccl_collective(parallel::Collective collective, double bytes, const CollectiveGroup& group,
                               const NcclLevel& intra, const NcclLevel& inter);

// A send to a neighbouring stage over a level: the ring's step latency plus the bytes at the
// ring's bus bandwidth of one rank (nccl-tests' sendrecv busbw is its algbw).
double nccl_p2p_seconds(double bytes, const NcclLevel& level);

}  // namespace sb::costmodel
