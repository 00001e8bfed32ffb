// SPDX-License-Identifier: Apache-2.0
// ProcessGrid over every factorisation of the world size (4 ranks: 4×1×1, 2×2×1, 2×1×2, 1×2×2,
// 1×4×1, 1×1×4): Megatron coordinates and the members of each sub-communicator.
#include <gtest/gtest.h>

#include <vector>

#include "core/check.hpp"
#include "mpi_test_environment.hpp"
#include "parallel/process_grid.hpp"

namespace sb::parallel {
namespace {

using testing::world;

struct GridShape {
  int dp, tp, pp;
};

std::vector<GridShape> every_grid(int world_size) {
  std::vector<GridShape> shapes;
  for (int dp = 1; dp <= world_size; ++dp) {
    for (int tp = 1; dp * tp <= world_size; ++tp) {
      if (world_size % (dp * tp) == 0) shapes.push_back({dp, tp, world_size / (dp * tp)});
    }
  }
  return shapes;
}

// The world ranks of comm's members, in comm's rank order.
std::vector<int> members(Communicator& comm, int world_rank) {
  return comm.all_gather_value<int>(world_rank);
}

TEST(ProcessGrid, CoordinatesAndSubCommunicatorsOfEveryShape) {
  Communicator& comm = world();
  const int rank = comm.rank();
  for (const GridShape shape : every_grid(comm.size())) {
    SCOPED_TRACE(::testing::Message() << "dp×tp×pp = " << shape.dp << "×" << shape.tp << "×" << shape.pp);
    ProcessGrid grid(comm, shape.dp, shape.tp, shape.pp);
    EXPECT_EQ(grid.world_rank(), rank);
    EXPECT_EQ(grid.tp_rank() + shape.tp * (grid.dp_rank() + shape.dp * grid.pp_rank()), rank);
    EXPECT_EQ(grid.world_rank_of(grid.dp_rank(), grid.tp_rank(), grid.pp_rank()), rank);
    EXPECT_EQ(grid.tp_rank(), rank % shape.tp);  // tp varies fastest

    EXPECT_EQ(grid.dp_comm().name(), "dp");
    EXPECT_EQ(grid.tp_comm().name(), "tp");
    EXPECT_EQ(grid.pp_comm().name(), "pp");
    EXPECT_EQ(grid.dp_comm().size(), shape.dp);
    EXPECT_EQ(grid.tp_comm().size(), shape.tp);
    EXPECT_EQ(grid.pp_comm().size(), shape.pp);
    EXPECT_EQ(grid.dp_comm().rank(), grid.dp_rank());
    EXPECT_EQ(grid.tp_comm().rank(), grid.tp_rank());
    EXPECT_EQ(grid.pp_comm().rank(), grid.pp_rank());

    std::vector<int> expected_dp, expected_tp, expected_pp;
    for (int d = 0; d < shape.dp; ++d) expected_dp.push_back(grid.world_rank_of(d, grid.tp_rank(), grid.pp_rank()));
    for (int t = 0; t < shape.tp; ++t) expected_tp.push_back(grid.world_rank_of(grid.dp_rank(), t, grid.pp_rank()));
    for (int p = 0; p < shape.pp; ++p) expected_pp.push_back(grid.world_rank_of(grid.dp_rank(), grid.tp_rank(), p));
    EXPECT_EQ(members(grid.dp_comm(), rank), expected_dp);
    EXPECT_EQ(members(grid.tp_comm(), rank), expected_tp);
    EXPECT_EQ(members(grid.pp_comm(), rank), expected_pp);

    // mp: the tp×pp ranks of this rank's model replica, in world order
    std::vector<int> expected_mp;
    for (int r = 0; r < comm.size(); ++r) {
      const GridCoordinates at = grid.coordinates_of(r);
      EXPECT_EQ(grid.world_rank_of(at.dp_rank, at.tp_rank, at.pp_rank), r);
      if (at.dp_rank == grid.dp_rank()) expected_mp.push_back(r);
    }
    EXPECT_EQ(grid.mp_comm().name(), "mp");
    EXPECT_EQ(members(grid.mp_comm(), rank), expected_mp);
  }
}

TEST(ProcessGrid, FourRankShapesAreCovered) {
  if (world().size() != 4) GTEST_SKIP() << "needs 4 ranks";
  const auto shapes = every_grid(4);
  for (const GridShape wanted : {GridShape{2, 2, 1}, GridShape{2, 1, 2}, GridShape{1, 2, 2}, GridShape{4, 1, 1}}) {
    bool found = false;
    for (const GridShape shape : shapes) {
      found |= shape.dp == wanted.dp && shape.tp == wanted.tp && shape.pp == wanted.pp;
    }
    EXPECT_TRUE(found);
  }
}

TEST(ProcessGrid, ShapeNotMatchingTheWorldIsAUserError) {
  Communicator& comm = world();
  try {
    ProcessGrid grid(comm, comm.size() + 1, 1, 1);
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("does not match"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mpirun -np"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ProcessGrid(comm, 0, comm.size(), 1), UserError);
}

}  // namespace
}  // namespace sb::parallel
