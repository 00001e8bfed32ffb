// SPDX-License-Identifier: Apache-2.0
// ProcessGrid: coordinates from the world rank and one MPI_Comm_split per axis.
#include "parallel/process_grid.hpp"

#include "core/check.hpp"

namespace sb::parallel {

ProcessGrid::ProcessGrid(Communicator& world, int dp, int tp, int pp)
    : world_(&world), dp_(dp), tp_(tp), pp_(pp) {
  SB_USER_CHECK(dp >= 1 && tp >= 1 && pp >= 1,
                "the process grid dp={} tp={} pp={} needs every size to be at least 1", dp, tp,
                pp);
  SB_USER_CHECK(static_cast<long long>(dp) * tp * pp == world.size(),
                "the process grid dp×tp×pp = {}×{}×{} = {} does not match the {} ranks of the MPI "
                "world; launch with mpirun -np {}",
                dp, tp, pp, static_cast<long long>(dp) * tp * pp, world.size(),
                static_cast<long long>(dp) * tp * pp);
  const int rank = world.rank();
  const GridCoordinates mine = coordinates_of(rank);
  dp_rank_ = mine.dp_rank;
  tp_rank_ = mine.tp_rank;
  pp_rank_ = mine.pp_rank;
  // Every rank takes part in all four splits, in the same order.
  dp_comm_ = world.split(tp_rank_ + tp * pp_rank_, dp_rank_, "dp");
  tp_comm_ = world.split(dp_rank_ + dp * pp_rank_, tp_rank_, "tp");
  pp_comm_ = world.split(tp_rank_ + tp * dp_rank_, pp_rank_, "pp");
  mp_comm_ = world.split(dp_rank_, rank, "mp");
}

std::vector<CommGroup> ProcessGrid::groups() const {
  return {{dp_comm_.get(), world_rank_of(0, tp_rank_, pp_rank_)},
          {tp_comm_.get(), world_rank_of(dp_rank_, 0, pp_rank_)},
          {pp_comm_.get(), world_rank_of(dp_rank_, tp_rank_, 0)},
          {mp_comm_.get(), world_rank_of(dp_rank_, 0, 0)}};
}

GridCoordinates ProcessGrid::coordinates_of(int world_rank) const {
  SB_CHECK(world_rank >= 0 && world_rank < dp_ * tp_ * pp_, "world rank {} is outside the grid of {} ranks",
           world_rank, dp_ * tp_ * pp_);
  return {.dp_rank = (world_rank / tp_) % dp_, .tp_rank = world_rank % tp_, .pp_rank = world_rank / (tp_ * dp_)};
}

int ProcessGrid::world_rank_of(int dp_rank, int tp_rank, int pp_rank) const {
  SB_CHECK(dp_rank >= 0 && dp_rank < dp_ && tp_rank >= 0 && tp_rank < tp_ && pp_rank >= 0 &&
               pp_rank < pp_,
           "grid coordinates (dp {}, tp {}, pp {}) are outside {}×{}×{}", dp_rank, tp_rank,
           pp_rank, dp_, tp_, pp_);
  return tp_rank + tp_ * (dp_rank + dp_ * pp_rank);
}

}  // namespace sb::parallel
