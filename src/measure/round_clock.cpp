// SPDX-License-Identifier: Apache-2.0
// The round clocks of the measurement harness (see round_clock.hpp).
#include "measure/round_clock.hpp"

#include "parallel/comm_stats.hpp"
#include "parallel/mpi_check.hpp"

namespace sb::measure {

void HostClock::start() { start_s_ = parallel::comm_clock_seconds(); }

double HostClock::stop() {
  settle();
  return parallel::comm_clock_seconds() - start_s_;
}

void MpiClock::start() {
  SB_MPI_CHECK(MPI_Barrier(comm_));
  start_s_ = parallel::comm_clock_seconds();
}

double MpiClock::stop() {
  settle();
  double seconds = parallel::comm_clock_seconds() - start_s_;
  SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm_));
  return seconds;
}

void CommunicatorClock::start() {
  comm_.barrier();
  start_s_ = parallel::comm_clock_seconds();
}

double CommunicatorClock::stop() {
  settle();
  const double seconds = parallel::comm_clock_seconds() - start_s_;
  return comm_.all_reduce_value(seconds, parallel::ReduceOp::max);
}

}  // namespace sb::measure
