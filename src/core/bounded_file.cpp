// SPDX-License-Identifier: Apache-2.0
// read_bounded_file: stat before open (opening a FIFO blocks until a writer comes), then read
// no more than the bound (and one chunk), since a regular file may grow between the stat and the read.
#include "core/bounded_file.hpp"

#include <fstream>
#include <system_error>
#include <vector>

#include "core/check.hpp"

namespace sb {

std::string file_kind(const std::filesystem::file_status& status) {
  switch (status.type()) {
    case std::filesystem::file_type::regular: return "a regular file";
    case std::filesystem::file_type::directory: return "a folder";
    case std::filesystem::file_type::fifo: return "a FIFO (named pipe)";
    case std::filesystem::file_type::character: return "a character device";
    case std::filesystem::file_type::block: return "a block device";
    case std::filesystem::file_type::socket: return "a socket";
    default: return "not a regular file";
  }
}

void require_regular_file(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  SB_USER_CHECK(!ec && std::filesystem::exists(status), "cannot read {} '{}' (missing or unreadable)", what,
                path.string());
  SB_USER_CHECK(std::filesystem::is_regular_file(status), "{} '{}' is {}, not a regular file; give a file", what,
                path.string(), file_kind(status));
}

std::string read_bounded_file(const std::filesystem::path& path, const std::string& what, std::uintmax_t max_bytes) {
  require_regular_file(path, what);
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  SB_USER_CHECK(!ec && size <= max_bytes, "{} '{}' holds {} bytes, more than the {} MiB it may hold", what,
                path.string(), ec ? 0 : size, max_bytes >> 20);
  std::ifstream in(path, std::ios::binary);
  SB_USER_CHECK(in.good(), "cannot read {} '{}' (missing or unreadable)", what, path.string());
  std::string text;
  std::vector<char> chunk(1 << 16);
  while (in && text.size() <= max_bytes) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
  }
  SB_USER_CHECK(text.size() <= max_bytes, "{} '{}' grew past the {} MiB it may hold while it was read", what,
                path.string(), max_bytes >> 20);
  SB_USER_CHECK(!in.bad(), "cannot read {} '{}': the read failed", what, path.string());
  return text;
}

}  // namespace sb
