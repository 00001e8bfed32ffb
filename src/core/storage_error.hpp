// SPDX-License-Identifier: Apache-2.0
// A file the system would not write (or read): a full disk, a quota, a read-only mount. The
// sentence names the path, what was being written and the system's reason (strerror and the
// errno name), and where it happened; the CLI prints it and exits 2 like any UserError: the
// user frees space or writes elsewhere. Leaves out recovering (the writers do what they can).
#pragma once

#include <filesystem>
#include <string>

#include "core/check.hpp"

namespace sb {

class StorageError : public UserError {
 public:
  // "cannot <action> <path>: no space left on device (ENOSPC); free space in <folder> or write
  // elsewhere (<where>, rank R on HOST)". action: "write the result file", "write checkpoint";
  // where: the failed call and its place ("HDF5 H5Fflush at src/io/results_file.cpp:320").
  // note: what the failure left, appended after the remedy ("the checkpoint there before is intact").
  StorageError(std::filesystem::path path, int error_number, const std::string& action, const std::string& where,
               const std::string& note = "");

  const std::filesystem::path& path() const { return path_; }
  int error_number() const { return error_number_; }
  const std::string& where() const { return where_; }
  // ENOSPC or EDQUOT: the run can go on once space is freed.
  bool out_of_space() const;

 private:
  std::filesystem::path path_;
  int error_number_ = 0;
  std::string where_;
};

// "ENOSPC", "EDQUOT", "EIO", ... ("errno N" for one not listed).
std::string errno_name(int error_number);

// Throws StorageError for errno (as left by a failed write, fsync, rename, ...).
[[noreturn]] void throw_storage_error(const std::filesystem::path& path, int error_number, const std::string& action,
                                      const std::string& where);

}  // namespace sb
