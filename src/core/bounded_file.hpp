// SPDX-License-Identifier: Apache-2.0
// Reading a whole user-named text file with a bound: a path that is not a regular file (a
// FIFO, /dev/zero, a folder) or that holds more than the bound is refused with one sentence
// before a byte is read, so an input that never ends cannot hang a command. Leaves out parsing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace sb {

// The most a YAML input (config, suite, site profile, spec) may hold: the largest committed
// one is under 20 KiB.
inline constexpr std::uintmax_t kMaxYamlBytes = std::uintmax_t{16} << 20;

// The bytes of `path`, `what` naming it in the sentence ("config file", "spec"). UserError when
// it is missing, not a regular file, or larger than `max_bytes`.
std::string read_bounded_file(const std::filesystem::path& path, const std::string& what, std::uintmax_t max_bytes);

// UserError unless `path` is a regular file (stat only, never open: a FIFO would block).
void require_regular_file(const std::filesystem::path& path, const std::string& what);

// "a FIFO", "a character device", "a folder", ...: what a path that is not a regular file is.
std::string file_kind(const std::filesystem::file_status& status);

}  // namespace sb
