// SPDX-License-Identifier: Apache-2.0
// Errors and check macros: every failure names the call, file:line, rank and host.
// User mistakes (config, paths, data) are UserError and become one sentence and exit code 2.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace sb {

// A fault in scalebench or a library it calls: a bug or a broken environment.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A mistake the user can fix (bad config key, missing file, corrupt data). The message is
// one sentence naming the file, key or value at fault; the CLI prints it and exits 2.
class UserError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// This machine's host name ("unknown-host" when it cannot be read).
std::string host_name();

// "rank R on HOST" when MPI is initialised, "HOST" otherwise. Queried, never cached.
std::string where_am_i();

[[noreturn]] void throw_check_failure(const char* condition, const char* file, int line,
                                      const std::string& message);

}  // namespace sb

// Internal invariant (shape, size, state). Stays on in Release builds.
#define SB_CHECK(cond, ...)                                                            \
  do {                                                                                 \
    if (!(cond)) ::sb::throw_check_failure(#cond, __FILE__, __LINE__,                  \
                                           ::fmt::format(__VA_ARGS__));                \
  } while (0)

#define SB_USER_CHECK(cond, ...)                                                       \
  do {                                                                                 \
    if (!(cond)) throw ::sb::UserError(::fmt::format(__VA_ARGS__));                    \
  } while (0)
