// SPDX-License-Identifier: Apache-2.0
// The sentence of a StorageError.
#include "core/storage_error.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cerrno>
#include <cstring>

namespace sb {

namespace {

std::string storage_sentence(const std::filesystem::path& path, int error_number, const std::string& action,
                             const std::string& where, const std::string& note) {
  const bool full = error_number == ENOSPC || error_number == EDQUOT;
  std::string reason = std::strerror(error_number);  // "No space left on device", mid-sentence here
  if (!reason.empty()) reason[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(reason[0])));
  return fmt::format("cannot {}{}{}: {} ({}){}{} ({}, {})", action, path.empty() ? "" : " ", path.string(), reason,
                     errno_name(error_number),
                     full ? fmt::format("; free space in {} or write elsewhere",
                                        path.parent_path().empty() ? std::string(".") : path.parent_path().string())
                          : "",
                     note.empty() ? std::string() : fmt::format("; {}", note), where, where_am_i());
}

}  // namespace

StorageError::StorageError(std::filesystem::path path, int error_number, const std::string& action,
                           const std::string& where, const std::string& note)
    : UserError(storage_sentence(path, error_number, action, where, note)),
      path_(std::move(path)),
      error_number_(error_number),
      where_(where) {}

bool StorageError::out_of_space() const { return error_number_ == ENOSPC || error_number_ == EDQUOT; }

std::string errno_name(int error_number) {
  switch (error_number) {
    case ENOSPC: return "ENOSPC";
    case EDQUOT: return "EDQUOT";
    case EFBIG: return "EFBIG";
    case EIO: return "EIO";
    case EROFS: return "EROFS";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EEXIST: return "EEXIST";
    case EXDEV: return "EXDEV";
    case EMFILE: return "EMFILE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ESTALE: return "ESTALE";
    default: return fmt::format("errno {}", error_number);
  }
}

void throw_storage_error(const std::filesystem::path& path, int error_number, const std::string& action,
                         const std::string& where) {
  throw StorageError(path, error_number, action, where);
}

}  // namespace sb
