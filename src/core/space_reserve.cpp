// SPDX-License-Identifier: Apache-2.0
// SpaceReserve: posix_fallocate of a file that is unlinked to give its blocks back.
#include "core/space_reserve.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "core/storage_error.hpp"

namespace sb {

SpaceReserve::SpaceReserve(const std::filesystem::path& file, std::uintmax_t bytes) {
  std::filesystem::path path = space_reserve_path(file);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const std::string action = fmt::format("hold back {} KiB for the failure record of", bytes >> 10);
  const std::string name = path.filename().string();
  if (fd < 0) throw_storage_error(file, errno, action, fmt::format("open of {}", name));
  // Blocks, not a sparse length: a full disk must not be able to take them back.
  const int error = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  ::close(fd);
  if (error != 0) {
    ::unlink(path.c_str());
    throw_storage_error(file, error, action, fmt::format("posix_fallocate of {}", name));
  }
  path_ = std::move(path);
}

SpaceReserve::SpaceReserve(SpaceReserve&& other) noexcept : path_(std::exchange(other.path_, {})) {}

SpaceReserve& SpaceReserve::operator=(SpaceReserve&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::exchange(other.path_, {});
  }
  return *this;
}

SpaceReserve::~SpaceReserve() { release(); }

bool SpaceReserve::release() noexcept {
  if (path_.empty()) return false;
  ::unlink(path_.c_str());
  path_.clear();
  return true;
}

std::filesystem::path space_reserve_path(const std::filesystem::path& path) {
  return path.parent_path() / fmt::format(".{}.reserve", path.filename().string());
}

}  // namespace sb
