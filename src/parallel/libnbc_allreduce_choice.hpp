// SPDX-License-Identifier: Apache-2.0
// Which algorithm Open MPI's libnbc uses for the next in-place MPI_Iallreduce. Internal to the
// MPI communicator. Leaves out every other collective (their defaults measured within 10% of
// the blocking calls here) and every MPI other than Open MPI (then this does nothing).
//
// Why: Open MPI 4.1's libnbc builds a binomial tree (reduce to rank 0, then broadcast) for
// every in-place MPI_Iallreduce and whenever there are fewer than 4 ranks. The all-reduce
// must be in place, so the non-blocking all-reduce reached only 55-60% of MPI_Allreduce's
// bus bandwidth at 16-256 MiB on 2 ranks. libnbc's ring moves 2(n-1)/n of the buffer per
// rank in both directions at once and matches or beats MPI_Allreduce there.
// How: the MCA variable coll_libnbc_iallreduce_algorithm is read when a call is issued, and
// MPI_T may write it at run time, so it is set per call by size (written only on change).
// A value the user chose (OMPI_MCA_coll_libnbc_iallreduce_algorithm, mpirun --mca, or a
// params file) is never overridden.
#pragma once

#include <cstdint>

namespace sb::parallel::detail {

// Below this size a tree's fewer steps win over the ring's bandwidth.
inline constexpr std::int64_t kRingAllReduceMinBytes = 64 * 1024;

// Call right before MPI_Iallreduce of `bytes` bytes. Process-wide, like the MCA variable it
// writes (MPI calls come from one thread: MPI_THREAD_FUNNELED).
void choose_libnbc_allreduce_algorithm(std::int64_t bytes);

}  // namespace sb::parallel::detail
