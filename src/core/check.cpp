// SPDX-License-Identifier: Apache-2.0
// Check-failure formatting shared by all check macros.
#include "core/check.hpp"

#include <unistd.h>

#ifndef SB_WITHOUT_MPI  // the MPI-free build for GPU test binaries (cmake/cuda.cmake)
#include <mpi.h>
#endif

namespace sb {

std::string host_name() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) return "unknown-host";
  return host;
}

std::string where_am_i() {
  const std::string host = host_name();
#ifndef SB_WITHOUT_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return fmt::format("rank {} on {}", rank, host);
  }
#endif
  return host;
}

void throw_check_failure(const char* condition, const char* file, int line,
                         const std::string& message) {
  throw Error(fmt::format("{} (check `{}` failed at {}:{}, {})", message, condition, file, line,
                          where_am_i()));
}

}  // namespace sb
