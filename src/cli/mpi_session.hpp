// SPDX-License-Identifier: Apache-2.0
// MPI for the lifetime of a command (train, calibrate): initialised with FUNNELED threading,
// finalised on every path out. Leaves out the communicators (parallel/).
#pragma once

#include <mpi.h>

namespace sb::cli {

class MpiSession {
 public:
  MpiSession(int& argc, char**& argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession() { MPI_Finalize(); }
  int world_size() const {
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
  }
};

}  // namespace sb::cli
