// SPDX-License-Identifier: Apache-2.0
// Bounded reads of a data file through zlib (see data_file.hpp).
#include "data/data_file.hpp"

#include <algorithm>
#include <memory>
#include <string>

#include "core/bounded_file.hpp"
#include "core/check.hpp"

namespace sb::data {

DataFile::DataFile(const std::filesystem::path& path) : path_(path) {
  std::error_code ec;
  SB_USER_CHECK(std::filesystem::exists(path, ec),
                "data file '{}' does not exist (run scripts/setup.sh, or set data.path or SB_DATA_DIR)", path.string());
  require_regular_file(path, "data file");
  file_ = gzopen(path.c_str(), "rb");
  SB_USER_CHECK(file_ != nullptr, "cannot open data file '{}'", path.string());
}

DataFile::~DataFile() {
  if (file_ != nullptr) gzclose(file_);
}

std::uint64_t DataFile::read(std::vector<std::uint8_t>& bytes, std::uint64_t count) {
  // Through a chunk left uninitialised: growing `bytes` by a zero-filled megabyte before each
  // gzread cost every small file (SpamAssassin's 6,046 messages) a megabyte of memset and page
  // faults, 80% of the corpus's load time.
  constexpr std::uint64_t kChunk = 1 << 20;
  const auto chunk = std::make_unique_for_overwrite<std::uint8_t[]>(kChunk);
  std::uint64_t got = 0;
  while (got < count) {
    const auto want = static_cast<unsigned>(std::min(kChunk, count - got));
    const int n = gzread(file_, chunk.get(), want);
    if (n > 0) bytes.insert(bytes.end(), chunk.get(), chunk.get() + n);
    int error = Z_OK;
    const char* message = gzerror(file_, &error);
    SB_USER_CHECK(n >= 0 && (error == Z_OK || error == Z_STREAM_END), "data file '{}' is corrupt or truncated ({})",
                  path_.string(), message);
    got += static_cast<std::uint64_t>(n);
    if (n == 0) {
      // gzread returns 0 at the end of the data, and also after a stream cut mid-way (gzerror then says so)
      SB_USER_CHECK(gzeof(file_) != 0, "data file '{}' is corrupt or truncated ({})", path_.string(), message);
      break;
    }
  }
  return got;
}

std::vector<std::uint8_t> read_data_file(const std::filesystem::path& path, std::uint64_t max_bytes) {
  DataFile file(path);
  std::vector<std::uint8_t> bytes;
  file.read(bytes, max_bytes + 1);
  SB_USER_CHECK(bytes.size() <= max_bytes, "data file '{}' holds more than {} bytes (decompressed), more than a data "
                "file of its kind may hold", path.string(), max_bytes);
  return bytes;
}

}  // namespace sb::data
