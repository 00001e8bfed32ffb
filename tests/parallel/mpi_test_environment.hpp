// SPDX-License-Identifier: Apache-2.0
// The MPI world shared by the tests of one mpirun job: mpi_test_main.cpp initialises MPI and
// builds it once. Leaves out anything test-specific.
#pragma once

#include "parallel/communicator.hpp"

namespace sb::parallel::testing {

// The world communicator of this process (valid while the tests run).
Communicator& world();

}  // namespace sb::parallel::testing
