// SPDX-License-Identifier: Apache-2.0
// Formats HDF5 failures for SB_H5_CHECK, quoting the innermost message of the error stack.
// Leaves out the full stack (set HDF5_DEBUG or run without H5QuietErrors to see it).
#include "io/h5_check.hpp"

#include <fmt/format.h>

namespace sb::io {

namespace {

// Walking upward, entry 0 is where the error was detected: the most specific description.
herr_t keep_innermost_description(unsigned n, const H5E_error2_t* error, void* out) {
  if (n == 0 && error != nullptr && error->desc != nullptr) {
    *static_cast<std::string*>(out) = error->desc;
  }
  return 0;
}

}  // namespace

std::string h5_error_stack_message() {
  std::string message;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost_description, &message);
  return message;
}

void throw_h5_failure(const char* call, const char* file, int line) {
  const std::string stack = h5_error_stack_message();
  throw Error(fmt::format("HDF5: {} (call `{}` failed at {}:{}, {})",
                          stack.empty() ? "call failed" : stack, call, file, line,
                          where_am_i()));
}

}  // namespace sb::io
