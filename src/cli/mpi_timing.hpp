// Timing a call on every rank of a communicator: the collectives sweep and the GEMM sweep of
// `calibrate` both take the slowest rank's mean. Leaves out choosing iterations and rounds.
#pragma once

#include <mpi.h>

#include <functional>

#include "parallel/mpi_check.hpp"

namespace sb::cli {

// Mean seconds per call over `iterations` calls after `warmups`, all ranks starting together;
// the slowest rank's.
inline double time_per_call(MPI_Comm comm, const std::function<void()>& call, int warmups, int iterations) {
  for (int i = 0; i < warmups; ++i) call();
  SB_MPI_CHECK(MPI_Barrier(comm));
  const double start = MPI_Wtime();
  for (int i = 0; i < iterations; ++i) call();
  double seconds = (MPI_Wtime() - start) / iterations;
  SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm));
  return seconds;
}

}  // namespace sb::cli
