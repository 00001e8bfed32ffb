// SPDX-License-Identifier: Apache-2.0
// Formats HDF5 failures for SB_H5_CHECK, quoting the innermost message of the error stack; a
// failure the operating system reported (a file driver's "errno = N", e.g. ENOSPC on a full
// disk) becomes a StorageError naming the file. Leaves out the full stack (set HDF5_DEBUG or run
// without H5QuietErrors to see it).
#include "io/h5_check.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "core/storage_error.hpp"

namespace sb::io {

namespace {

// Walking upward, entry 0 is where the error was detected: the most specific description.
herr_t keep_innermost_description(unsigned n, const H5E_error2_t* error, void* out) {
  if (n == 0 && error != nullptr && error->desc != nullptr) {
    *static_cast<std::string*>(out) = error->desc;
  }
  return 0;
}

// The file drivers' system-call failures read "..., filename = 'F', ..., errno = N, ..."
// (sec2 reads and writes) or "..., errno = N, error message = '...'" (HSYS errors: truncate).
herr_t find_system_error(unsigned, const H5E_error2_t* error, void* out) {
  auto& found = *static_cast<H5SystemError*>(out);
  if (found.error_number != 0 || error == nullptr || error->desc == nullptr) return 0;
  const std::string desc = error->desc;
  const std::size_t at = desc.find("errno = ");
  // an open or a lock that failed is the caller's to explain (a missing folder, a file in use)
  if (at == std::string::npos || desc.find("unable to open") != std::string::npos ||
      desc.find("unable to lock") != std::string::npos)
    return 0;
  found.error_number = std::atoi(desc.c_str() + at + 8);
  found.reading = desc.find("read failed") != std::string::npos;
  const std::size_t name = desc.find("filename = '");
  if (name != std::string::npos) {
    const std::size_t begin = name + 12, end = desc.find('\'', begin);
    if (end != std::string::npos) found.path = desc.substr(begin, end - begin);
  }
  return 0;
}

// "H5Dwrite" out of "H5Dwrite(dataset.get(), ...)": the sentence names the call, not its text.
std::string call_name(const char* call) {
  const std::string text = call;
  return text.substr(0, text.find('('));
}

}  // namespace

std::string h5_error_stack_message() {
  std::string message;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, keep_innermost_description, &message);
  return message;
}

H5SystemError h5_system_error() {
  H5SystemError found;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, find_system_error, &found);
  return found;
}

void throw_h5_failure(const char* call, const char* file, int line) {
  const H5SystemError system = h5_system_error();
  if (system.error_number > 0)
    throw_storage_error(system.path, system.error_number, system.reading ? "read the HDF5 file" : "write the HDF5 file",
                        fmt::format("HDF5 {} at {}:{}", call_name(call), file, line));
  const std::string stack = h5_error_stack_message();
  throw Error(fmt::format("HDF5: {} (call `{}` failed at {}:{}, {})",
                          stack.empty() ? "call failed" : stack, call, file, line,
                          where_am_i()));
}

void throw_h5_create_failure(const std::filesystem::path& path, const std::string& what) {
  const H5SystemError system = h5_system_error();
  if (system.error_number > 0) throw_storage_error(path, system.error_number, "create", "HDF5 H5Fcreate");
  throw UserError(fmt::format("cannot create {}{}: {}", what, path.string(), h5_error_stack_message()));
}

}  // namespace sb::io
