// SPDX-License-Identifier: Apache-2.0
// NCCL's collectives by algorithm (nccl_collectives.hpp): each formula against a hand count,
// the choice by message size, the groups a layout makes, and the shipped DGX H100 profile's
// figures end to end. Leaves out which collectives a step calls (test_step_prediction.cpp).
#include <gtest/gtest.h>

#include "costmodel/nccl_collectives.hpp"
#include "costmodel/site_profile.hpp"

namespace sb::costmodel {
namespace {

using parallel::Collective;
constexpr double GB = 1e9, us = 1e-6;

NcclLevel nvswitch_node() {
  NcclLevel l;
  l.ring = NcclAlgorithmCost{370 * GB, 3.4 * us, 8.4 * us};
  l.tree = NcclAlgorithmCost{340 * GB, 4.0 * us, 8.4 * us};
  l.nvls = NcclAlgorithmCost{480 * GB, 0.0, 25 * us};
  return l;
}
NcclLevel rails() {
  NcclLevel l;
  l.ring = NcclAlgorithmCost{47 * GB, 14 * us, 8.4 * us};
  l.tree = NcclAlgorithmCost{43 * GB, 14 * us, 8.4 * us};
  return l;
}

TEST(NcclCollectives, RingAllReduceInsideANodeIsBasePlusStepsPlusBusBandwidth) {
  const CollectiveGroup g{8, 1, 8};
  const double S = 256e6;
  const double expected = 8.4 * us + 2 * 7 * 3.4 * us + 2.0 * 7 / 8 * S / (370 * GB);
  EXPECT_NEAR(*nccl_algorithm_seconds(NcclAlgorithm::ring, Collective::all_reduce, S, g, nvswitch_node(), rails()),
              expected, 1e-12);
  // reduce-scatter and all-gather: half the steps and half the bytes on the wire
  const double half = 8.4 * us + 7 * 3.4 * us + 7.0 / 8 * S / (370 * GB);
  EXPECT_NEAR(*nccl_algorithm_seconds(NcclAlgorithm::ring, Collective::reduce_scatter, S, g, nvswitch_node(), rails()),
              half, 1e-12);
  EXPECT_NEAR(*nccl_algorithm_seconds(NcclAlgorithm::ring, Collective::all_gather, S, g, nvswitch_node(), rails()),
              half, 1e-12);
}

TEST(NcclCollectives, RingAcrossNodesTakesTheRailsPerRankOnTheNodeAndTheNetworkSteps) {
  // 4 nodes × 2 ranks: 2 rails of 47 GB/s, 6 network steps of the 14 ring steps
  const CollectiveGroup g{8, 4, 8};
  const double S = 100e6;
  const double expected = 8.4 * us + (14 - 6) * 3.4 * us + 6 * 14 * us + 2.0 * 7 / 8 * S / (2 * 47 * GB);
  EXPECT_NEAR(*nccl_algorithm_seconds(NcclAlgorithm::ring, Collective::all_reduce, S, g, nvswitch_node(), rails()),
              expected, 1e-12);
  // a full node's rails never exceed what the node's own links reach
  NcclLevel fat = rails();
  fat.ring->bus_bandwidth = 100 * GB;
  const CollectiveGroup full{16, 2, 8};
  const double capped = 8.4 * us + (30 - 2) * 3.4 * us + 2 * 14 * us + 2.0 * 15 / 16 * S / (370 * GB);
  EXPECT_NEAR(*nccl_algorithm_seconds(NcclAlgorithm::ring, Collective::all_reduce, S, full, nvswitch_node(), fat),
              capped, 1e-12);
  // and max_bus_bandwidth caps the scaled figure
  fat.ring->max_bus_bandwidth = 200 * GB;
  const double at_cap = 8.4 * us + (30 - 2) * 3.4 * us + 2 * 14 * us + 2.0 * 15 / 16 * S / (200 * GB);
  EXPECT_NEAR(*nccl_algorithm_seconds(NcclAlgorithm::ring, Collective::all_reduce, S, full, nvswitch_node(), fat),
              at_cap, 1e-12);
}

TEST(NcclCollectives, TreeLatencyGrowsWithTheLogOfTheNodes) {
  const CollectiveGroup g{64, 64, 8};  // one rank per node (tp = 8)
  const double expected = 8.4 * us + 2 * (0 * 4.0 * us + 6 * 14 * us) + 2.0 * 63 / 64 * 1e6 / (43 * GB);
  EXPECT_NEAR(*nccl_algorithm_seconds(NcclAlgorithm::tree, Collective::all_reduce, 1e6, g, nvswitch_node(), rails()),
              expected, 1e-12);
  // tree and NVLS are all-reduce algorithms only
  EXPECT_FALSE(nccl_algorithm_seconds(NcclAlgorithm::tree, Collective::all_gather, 1e6, g, nvswitch_node(), rails()));
  EXPECT_FALSE(nccl_algorithm_seconds(NcclAlgorithm::nvls, Collective::reduce_scatter, 1e6, CollectiveGroup{8, 1, 8},
                                      nvswitch_node(), rails()));
}

TEST(NcclCollectives, NvlsNeedsTheWholeNodeAndNoNetwork) {
  const NcclLevel node = nvswitch_node();
  EXPECT_NEAR(*nccl_algorithm_seconds(NcclAlgorithm::nvls, Collective::all_reduce, 1e9, CollectiveGroup{8, 1, 8}, node,
                                      rails()),
              25 * us + 2.0 * 7 / 8 * 1e9 / (480 * GB), 1e-12);
  EXPECT_FALSE(nccl_algorithm_seconds(NcclAlgorithm::nvls, Collective::all_reduce, 1e9, CollectiveGroup{4, 1, 8}, node,
                                      rails()));
  EXPECT_FALSE(nccl_algorithm_seconds(NcclAlgorithm::nvls, Collective::all_reduce, 1e9, CollectiveGroup{16, 2, 8},
                                      node, rails()));
}

TEST(NcclCollectives, TheTunerPicksTheFastestAlgorithmForTheMessageSize) {
  const NcclLevel node = nvswitch_node();
  const CollectiveGroup tp8{8, 1, 8};
  // a whole node: NVLS's 480 GB/s beats the ring's 370, and its one 25 us latency the ring's
  // 8.4 + 14 × 3.4 us
  EXPECT_EQ(nccl_collective(Collective::all_reduce, 256e6, tp8, node, rails()).algorithm, NcclAlgorithm::nvls);
  // without NVLS, the ring wins large messages inside a node (more bandwidth than the tree)
  NcclLevel no_nvls = node;
  no_nvls.nvls.reset();
  EXPECT_EQ(nccl_collective(Collective::all_reduce, 256e6, tp8, no_nvls, rails()).algorithm, NcclAlgorithm::ring);
  // across 128 nodes small buckets go by tree (7 network steps each way instead of 254), large by ring
  const CollectiveGroup dp{128, 128, 8};
  EXPECT_EQ(nccl_collective(Collective::all_reduce, 1e6, dp, node, rails()).algorithm, NcclAlgorithm::tree);
  EXPECT_EQ(nccl_collective(Collective::all_reduce, 4e9, dp, node, rails()).algorithm, NcclAlgorithm::ring);
  // the chosen time is the smallest of the candidates
  const double ring = *nccl_algorithm_seconds(NcclAlgorithm::ring, Collective::all_reduce, 1e6, dp, node, rails());
  const double tree = *nccl_algorithm_seconds(NcclAlgorithm::tree, Collective::all_reduce, 1e6, dp, node, rails());
  EXPECT_DOUBLE_EQ(nccl_collective(Collective::all_reduce, 1e6, dp, node, rails()).seconds, std::min(ring, tree));
  // one rank: nothing to do
  EXPECT_EQ(nccl_collective(Collective::all_reduce, 1e9, CollectiveGroup{1, 1, 8}, node, rails()).seconds, 0.0);
}

TEST(NcclCollectives, GroupsOfALayout) {
  // tp = 8 inside a node; dp over 16 with stride 8: one rank per node
  const CollectiveGroup dp = collective_group(16, 8, 8);
  EXPECT_EQ(dp.nodes, 16);
  EXPECT_EQ(dp.ranks_per_node(), 1);
  // tp = 2: four ranks of a dp group on each node
  const CollectiveGroup dp2 = collective_group(16, 2, 8);
  EXPECT_EQ(dp2.nodes, 4);
  EXPECT_EQ(dp2.ranks_per_node(), 4);
  // a small group stays on one node
  EXPECT_EQ(collective_group(4, 1, 8).nodes, 1);
}

TEST(NcclCollectives, P2pIsOneStepAndTheRingsBandwidth) {
  EXPECT_NEAR(nccl_p2p_seconds(47e6, rails()), 14 * us + 47e6 / (47 * GB), 1e-12);
}

TEST(NcclCollectives, ShippedDgxH100ProfileCarriesEveryAlgorithm) {
  const SiteProfile p = load_site_profile(std::string(SB_SOURCE_DIR) + "/jobs/sites/h100-sxm-dgx.yaml");
  ASSERT_TRUE(p.nccl_collectives());
  EXPECT_TRUE(p.intra_node.nccl->ring && p.intra_node.nccl->tree && p.intra_node.nccl->nvls);
  EXPECT_TRUE(p.inter_node.nccl->ring && p.inter_node.nccl->tree);
  EXPECT_FALSE(p.inter_node.nccl->nvls);
  // a tp = 8 activation all-reduce of GPT-3 175B (b 1, s 2048, h 12288, bf16) by NVLS: ~0.12 ms
  const double S = 2048.0 * 12288 * 2;
  const CollectiveTime t = nccl_collective(Collective::all_reduce, S, CollectiveGroup{8, 1, 8}, *p.intra_node.nccl,
                                           *p.inter_node.nccl);
  EXPECT_EQ(t.algorithm, NcclAlgorithm::nvls);
  EXPECT_NEAR(t.seconds, 25 * us + 1.75 * S / 480e9, 1e-9);
}

}  // namespace
}  // namespace sb::costmodel
