// SPDX-License-Identifier: Apache-2.0
// Gathering the ranks' host names and node-local ranks (see node_placement.hpp).
#include "parallel/node_placement.hpp"

#include <algorithm>
#include <cstring>

#include "core/check.hpp"
#include "core/environment.hpp"
#include "parallel/mpi_check.hpp"

namespace sb::parallel {

namespace {

constexpr int kHostBytes = 256;  // HOST_NAME_MAX + 1 on Linux
constexpr int kMostLocalRanks = 1 << 20;

}  // namespace

std::optional<int> launcher_local_rank() {
  for (const char* variable : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"})
    if (const auto value = environment_integer(variable, 0, kMostLocalRanks, "this process's rank on its node"))
      return static_cast<int>(*value);
  return std::nullopt;
}

int NodePlacement::most_ranks_on_a_node() const {
  std::vector<int> ranks(hosts.size(), 0);
  for (const std::int64_t node : rank_nodes) ++ranks[static_cast<std::size_t>(node)];
  return ranks.empty() ? 1 : *std::max_element(ranks.begin(), ranks.end());
}

std::string NodePlacement::host_of(std::int64_t world_rank) const {
  if (world_rank < 0 || world_rank >= static_cast<std::int64_t>(rank_nodes.size())) return "";
  return hosts[static_cast<std::size_t>(rank_nodes[static_cast<std::size_t>(world_rank)])];
}

NodePlacement gather_node_placement(MPI_Comm world) {
  int size = 1;
  SB_MPI_CHECK(MPI_Comm_size(world, &size));
  char mine[kHostBytes] = {};
  const std::string host = host_name();
  std::strncpy(mine, host.c_str(), kHostBytes - 1);
  std::vector<char> names(static_cast<std::size_t>(size) * kHostBytes);
  SB_MPI_CHECK(MPI_Allgather(mine, kHostBytes, MPI_CHAR, names.data(), kHostBytes, MPI_CHAR, world));

  int local = 0;
  if (const std::optional<int> given = launcher_local_rank()) {
    local = *given;
  } else {
    MPI_Comm node = MPI_COMM_NULL;
    SB_MPI_CHECK(MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    SB_MPI_CHECK(MPI_Comm_rank(node, &local));
    MPI_Comm_free(&node);
  }
  std::int64_t local64 = local;
  NodePlacement p;
  p.rank_node_ranks.resize(static_cast<std::size_t>(size));
  SB_MPI_CHECK(MPI_Allgather(&local64, 1, MPI_INT64_T, p.rank_node_ranks.data(), 1, MPI_INT64_T, world));

  std::vector<std::string> by_rank;
  for (int r = 0; r < size; ++r) by_rank.emplace_back(&names[static_cast<std::size_t>(r) * kHostBytes]);
  p.hosts = by_rank;
  std::sort(p.hosts.begin(), p.hosts.end());
  p.hosts.erase(std::unique(p.hosts.begin(), p.hosts.end()), p.hosts.end());
  for (const std::string& name : by_rank)
    p.rank_nodes.push_back(std::lower_bound(p.hosts.begin(), p.hosts.end(), name) - p.hosts.begin());
  return p;
}

}  // namespace sb::parallel
