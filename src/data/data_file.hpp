// SPDX-License-Identifier: Apache-2.0
// Reading a data set's file with a bound: regular files only (a FIFO, /dev/zero or a folder is
// refused before it is opened), gzip decompressed on the fly, and never more bytes than the
// caller allows, so a file that never ends, a gzip bomb or a header promising terabytes cannot
// hang the loader or exhaust memory. Leaves out the formats (image_dataset, text_corpus, spam_corpus).
#pragma once

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <vector>

namespace sb::data {

// One data file opened for bounded reads; zlib's gzread reads plain files unchanged.
class DataFile {
 public:
  // UserError when `path` is missing, is not a regular file, or cannot be opened.
  explicit DataFile(const std::filesystem::path& path);
  ~DataFile();
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;

  // Appends up to `count` more (decompressed) bytes to `bytes`, fewer at the end of the data;
  // returns how many. UserError when the gzip stream is corrupt or cut.
  std::uint64_t read(std::vector<std::uint8_t>& bytes, std::uint64_t count);

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  gzFile file_ = nullptr;
};

// The whole (decompressed) file; UserError, naming it and the bound, when it holds more than
// `max_bytes`.
std::vector<std::uint8_t> read_data_file(const std::filesystem::path& path, std::uint64_t max_bytes);

}  // namespace sb::data
