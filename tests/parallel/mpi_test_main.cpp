// SPDX-License-Identifier: Apache-2.0
// main() for GoogleTest binaries run through mpirun: MPI and the world communicator around
// RUN_ALL_TESTS, every rank running the same tests in the same order. Only rank 0 prints
// passing tests; every rank prints its failures.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <memory>

#include "mpi_test_environment.hpp"
#include "rank_failure_printer.hpp"
#include "parallel/fault.hpp"

namespace sb::parallel::testing {

namespace {
std::unique_ptr<Communicator> g_world;  // test-binary state: set before and cleared after the tests
}  // namespace

Communicator& world() { return *g_world; }

}  // namespace sb::parallel::testing

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  int exit_code = 1;
  {
    sb::parallel::testing::g_world = sb::parallel::make_mpi_world_communicator();
    if (sb::parallel::testing::world().rank() != 0) {
      // Rank 0's report lists the tests; the others add only their failures.
      auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new sb::parallel::testing::RankFailurePrinter(sb::parallel::testing::world().rank()));
    }
    exit_code = RUN_ALL_TESTS();
    // Every rank's verdict: a failure on any rank fails the job on every rank.
    exit_code = sb::parallel::testing::world().all_reduce_value(exit_code, sb::parallel::ReduceOp::max);
    sb::parallel::testing::g_world.reset();
  }
  MPI_Finalize();
  return exit_code;
}
