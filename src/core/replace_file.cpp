// SPDX-License-Identifier: Apache-2.0
// replace_file: write, fsync, rename, each checked (see replace_file.hpp).
#include "core/replace_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "core/storage_error.hpp"

namespace sb {

namespace {

// Errors name the file the user asked for, not its partial copy (which is removed).
void write_all(int fd, std::string_view contents, const std::filesystem::path& path, const std::string& action) {
  while (!contents.empty()) {
    const ssize_t written = ::write(fd, contents.data(), contents.size());
    if (written < 0 && errno == EINTR) continue;
    if (written < 0) throw_storage_error(path, errno, action, "write");
    contents.remove_prefix(static_cast<std::size_t>(written));
  }
  if (::fsync(fd) != 0) throw_storage_error(path, errno, action, "fsync");
}

}  // namespace

void replace_file(const std::filesystem::path& path, std::string_view contents, const std::string& what) {
  const std::string action = "write " + what;
  const std::filesystem::path partial = path.string() + ".partial";
  int fd = ::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw_storage_error(path, errno, action, "open of its .partial file");
  try {
    write_all(fd, contents, path, action);
    const int closed = ::close(std::exchange(fd, -1));
    if (closed != 0) throw_storage_error(path, errno, action, "close");
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(partial.c_str());
    throw;
  }
  if (::rename(partial.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(partial.c_str());
    throw_storage_error(path, error, action, "rename");
  }
}

}  // namespace sb
