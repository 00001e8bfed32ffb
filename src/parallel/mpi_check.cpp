// SPDX-License-Identifier: Apache-2.0
// The message of an MPI failure: MPI's own error string plus where it happened.
#include "parallel/mpi_check.hpp"

namespace sb::parallel {

void throw_mpi_failure(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  throw Error(fmt::format("MPI: {} (call `{}` failed at {}:{}, {})",
                          length > 0 ? std::string(text, static_cast<std::size_t>(length))
                                     : fmt::format("error code {}", code),
                          call, file, line, where_am_i()));
}

}  // namespace sb::parallel
