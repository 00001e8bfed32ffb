// SPDX-License-Identifier: Apache-2.0
// The dp×tp×pp process grid over a world communicator (Megatron order: tp varies fastest, then
// dp, then pp) and the three sub-communicators each rank talks through. Leaves out which layers
// or micro-batches live where (the strategies decide that).
#pragma once

#include <memory>
#include <vector>

#include "parallel/communicator.hpp"

namespace sb::parallel {

struct GridCoordinates {
  int dp_rank = 0, tp_rank = 0, pp_rank = 0;
};

// One of a rank's communicators and the world rank of the group's first rank: the ranks that see
// the same name and root are one group (which dp group, tp group, ...) and made the same
// collective calls, in the same order.
struct CommGroup {
  Communicator* comm = nullptr;
  int root = 0;
};

class ProcessGrid {
 public:
  // Collective over world. UserError unless dp, tp, pp >= 1 and dp·tp·pp == world.size().
  // world must outlive the grid.
  ProcessGrid(Communicator& world, int dp, int tp, int pp);

  int dp() const { return dp_; }
  int tp() const { return tp_; }
  int pp() const { return pp_; }
  // world rank = tp_rank + tp·(dp_rank + dp·pp_rank)
  int world_rank() const { return world_->rank(); }
  int dp_rank() const { return dp_rank_; }
  int tp_rank() const { return tp_rank_; }
  int pp_rank() const { return pp_rank_; }
  // The world rank of the process at these coordinates.
  int world_rank_of(int dp_rank, int tp_rank, int pp_rank) const;
  // The coordinates of a world rank.
  GridCoordinates coordinates_of(int world_rank) const;

  Communicator& world() { return *world_; }
  // Ranks that share this rank's (tp_rank, pp_rank), ordered by dp_rank; named "dp".
  Communicator& dp_comm() { return *dp_comm_; }
  // Ranks that share (dp_rank, pp_rank), ordered by tp_rank; named "tp".
  Communicator& tp_comm() { return *tp_comm_; }
  // Ranks that share (dp_rank, tp_rank), ordered by pp_rank (stage); named "pp".
  Communicator& pp_comm() { return *pp_comm_; }
  // Ranks that share dp_rank: the tp×pp ranks that together hold one replica of the model,
  // ordered by world rank; named "mp" (the gradient norm and evaluation span it).
  Communicator& mp_comm() { return *mp_comm_; }
  // The four sub-communicators, each with the world rank of its first rank: for their statistics.
  std::vector<CommGroup> groups() const;

 private:
  Communicator* world_;
  int dp_, tp_, pp_;
  int dp_rank_, tp_rank_, pp_rank_;
  std::unique_ptr<Communicator> dp_comm_, tp_comm_, pp_comm_, mp_comm_;
};

}  // namespace sb::parallel
