// SPDX-License-Identifier: Apache-2.0
// Which node each rank of a job runs on and its rank among that node's ranks: what picks a
// rank's GPU (select_local_device), what the run context records (rank_nodes,
// rank_node_ranks), and what the trainer's prediction places its groups by (intra- or
// inter-node links). Leaves out the links themselves (costmodel/site_profile.hpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sb::parallel {

// The node-local rank the launcher gives this process (OMPI_COMM_WORLD_LOCAL_RANK, then
// SLURM_LOCALID, then MPI_LOCALRANKID), or nullopt when none of them is set. UserError naming
// the variable when its value is not an integer from 0 to 2^20.
std::optional<int> launcher_local_rank();

// Every rank's node, by world rank (gathered over `world`).
struct NodePlacement {
  std::vector<std::string> hosts;           // the nodes' host names, sorted
  std::vector<std::int64_t> rank_nodes;     // (world size) index into hosts of each rank's node
  std::vector<std::int64_t> rank_node_ranks;  // (world size) each rank's rank on its node
  int nodes() const { return static_cast<int>(hosts.size()); }
  int most_ranks_on_a_node() const;
  std::string host_of(std::int64_t world_rank) const;
};

// Collective over `world`: each rank's host name (gethostname) and node-local rank (the
// launcher's, else its rank in MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)).
NodePlacement gather_node_placement(MPI_Comm world);

}  // namespace sb::parallel
