// SPDX-License-Identifier: Apache-2.0
// SB_MPI_CHECK: an MPI call's error code becomes sb::Error naming the call, file:line, rank and
// host. Leaves out the error handler choice (communicators set MPI_ERRORS_RETURN so codes reach it).
#pragma once

#include <mpi.h>

#include "core/check.hpp"

namespace sb::parallel {

[[noreturn]] void throw_mpi_failure(int code, const char* call, const char* file, int line);

}  // namespace sb::parallel

#define SB_MPI_CHECK(call)                                                                \
  do {                                                                                    \
    const int sb_mpi_code = (call);                                                       \
    if (sb_mpi_code != MPI_SUCCESS)                                                       \
      ::sb::parallel::throw_mpi_failure(sb_mpi_code, #call, __FILE__, __LINE__);          \
  } while (0)
