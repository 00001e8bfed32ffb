// SPDX-License-Identifier: Apache-2.0
// Who the ranks waited for, on a collectives table written by hand: the last to arrive at each
// collective, the lateness per step, the share of the waits, the first step and the pipeline's
// sends left out, and a run without collectives.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "../io/example_run.hpp"
#include "io/results_file.hpp"
#include "validate/collective_arrivals.hpp"

namespace sb::validate {
namespace {

using io::CollectiveRow;

// Three ranks of one dp group, two collectives a step: rank 1 computes longest before the
// gradient all-reduce, rank 0 before the loss's.
std::vector<CollectiveRow> three_ranks() {
  std::vector<CollectiveRow> rows;
  for (std::int64_t step = 1; step <= 3; ++step) {
    const double first = step == 1 ? 9.0 : 0.0;  // the first step, left out, would turn it all around
    const double gradients[] = {0.10 + first, 0.15, 0.10};
    const double loss[] = {0.002, 0.001, 0.001};
    for (std::int64_t rank = 0; rank < 3; ++rank) {
      rows.push_back({step, rank, "dp", 0, 0, "all_reduce", 4096, 0, gradients[rank], gradients[rank], 0, 0});
      rows.push_back({step, rank, "dp", 0, 1, "all_reduce", 8, 1, 0.2, loss[rank], 0, 0});
    }
    rows.push_back({step, 2, "pp", 2, 0, "send", 64, 1, 0.3, 5.0, 0, 0});  // pairs stages: left out
  }
  return rows;
}

std::map<int, Arrivals> arrivals_of(const std::vector<CollectiveRow>& rows) {
  const io::testing::ScratchFile scratch("collective_arrivals");
  {
    io::ResultsFile file = io::ResultsFile::create(scratch.path());
    io::RunWriter run = file.begin_run("r", io::testing::example_run_attributes());
    run.write_collectives(rows);
    run.finish("ok", "");
  }
  return collective_arrivals(scratch.path(), "r");
}

TEST(CollectiveArrivals, NamesTheRankTheOthersWaitedFor) {
  const std::map<int, Arrivals> a = arrivals_of(three_ranks());
  ASSERT_EQ(a.size(), 3u);
  // rank 1: last at the gradient all-reduce of steps 2 and 3, 0.05 s after the others' median
  // there and 0.0005 s before it at the loss's
  EXPECT_EQ(a.at(1).collectives, 4);
  EXPECT_DOUBLE_EQ(a.at(1).last_pct, 50.0);
  EXPECT_NEAR(a.at(1).late_by_s, 0.05 - 0.0005, 1e-12);
  // the waits: 2 × (0.05 + 0.05) for rank 1, 2 × (0.001 + 0.001) for rank 0
  EXPECT_NEAR(a.at(1).waited_for_pct, 100.0 * 0.2 / 0.204, 1e-9);
  EXPECT_NEAR(a.at(0).waited_for_pct, 100.0 * 0.004 / 0.204, 1e-9);
  EXPECT_DOUBLE_EQ(a.at(0).last_pct, 50.0);
  EXPECT_DOUBLE_EQ(a.at(2).last_pct, 0.0);
  EXPECT_DOUBLE_EQ(a.at(2).waited_for_pct, 0.0);
  EXPECT_EQ(a.at(2).groups, "dp");  // its sends on pp are not collectives
}

TEST(CollectiveArrivals, TiedRanksAreNotLast) {
  std::vector<CollectiveRow> rows;
  for (std::int64_t step = 1; step <= 2; ++step)
    for (std::int64_t rank = 0; rank < 2; ++rank) rows.push_back({step, rank, "tp", 0, 0, "all_reduce", 8, 1, 0.1, 0.1, 0, 0});
  const std::map<int, Arrivals> a = arrivals_of(rows);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_DOUBLE_EQ(a.at(0).last_pct, 0.0);
  EXPECT_DOUBLE_EQ(a.at(1).last_pct, 0.0);
  EXPECT_DOUBLE_EQ(a.at(0).waited_for_pct, 0.0);
  EXPECT_EQ(a.at(0).groups, "tp");
}

TEST(CollectiveArrivals, NoneForARunWithoutCollectives) { EXPECT_TRUE(arrivals_of({}).empty()); }

}  // namespace
}  // namespace sb::validate
