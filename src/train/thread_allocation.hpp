// SPDX-License-Identifier: Apache-2.0
// How many OpenMP/BLAS threads each rank runs, from the case or from what the allocation gives
// the process, and whether the ranks of a node then ask for more CPUs than they may use.
// Leaves out starting the threads (runtime/parallel_runtime.hpp) and recording (run_context).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>

#include "io/attr_value.hpp"

namespace sb::train {

struct ThreadAllocation {
  int threads = 1;
  // Where the count came from: "config" (the case's `threads`), "OMP_NUM_THREADS",
  // "SLURM_CPUS_PER_TASK", or "affinity" (this rank's share of the CPUs in its affinity mask).
  std::string source;
  int cpus_allowed = 1;        // CPUs in this process's affinity mask when it started
  std::string cpus_allowed_list;  // the same mask, "0-3,8"
  int node_cpus = 1;           // CPUs of the union of the masks of this node's ranks
  int node_ranks = 1;          // ranks on this node
  bool oversubscribed = false; // on some node the ranks' threads outnumber its node_cpus
};

// Collective over `world`. The first of these that is set wins:
// 1. the case's `threads` (> 0): the case was written for that shape, and the cost model
//    predicts it;
// 2. OMP_NUM_THREADS: OpenMP's own setting, which libgomp has already sized its pool by and
//    which job scripts export for the allocation (PBS sets it from ompthreads);
// 3. SLURM_CPUS_PER_TASK (at most the CPUs of the mask): the allocation's CPUs per rank when
//    the launcher did not narrow the mask to them (Slurm without a task/affinity plugin);
// 4. the CPUs of the process's start affinity mask, shared evenly by the ranks of the node
//    whose masks are identical (mpirun without binding gives every rank the whole mask).
// A stated count above the host's CPUs (from the case or the environment) is a UserError naming
// where it came from (`config_source`: the case's file): Kokkos's OpenMP start-up crashed at 50000.
// UserError, naming the variable, when OMP_NUM_THREADS or SLURM_CPUS_PER_TASK is set but is no
// thread count: read before a command writes anything.
void check_thread_environment();

ThreadAllocation allocate_threads(std::int64_t configured_threads, const std::string& config_source, MPI_Comm world);

// The context attributes (results/README.md): threads_source, cpus_allowed,
// cpus_allowed_list, node_ranks, node_cpus, oversubscribed (0 or 1), rank 0's.
io::Attributes thread_allocation_context(const ThreadAllocation& a);

// `id`, with "-oversubscribed" appended when the run oversubscribes and the id does not say so
// already (as the suites name such cases by hand).
std::string name_saying_oversubscription(const std::string& id, const ThreadAllocation& a);

}  // namespace sb::train
