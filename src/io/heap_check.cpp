// SPDX-License-Identifier: Apache-2.0
// Checks an HDF5 file's heaps before libhdf5 reads them. Walks each global heap collection as
// H5HG__cache_heap_deserialize does (HDF5 file format specification, "III.E Global Heap"): a
// 16-byte header ("GCOL", version 1, three reserved zero bytes, collection size), then objects,
// each a 16-byte header (index u16, reference count u16, reserved u32, size in "size of lengths"
// bytes) and its data padded to 8 bytes; object 0 is the free space, whose size counts its own
// header. Reads each local heap's prefix ("III.D Local Heap") for the data segment it claims.
#include "io/heap_check.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/check.hpp"

namespace sb::io {

namespace {

constexpr std::array<char, 8> kSuperblockSignature = {'\x89', 'H', 'D', 'F', '\r', '\n', '\x1a', '\n'};
constexpr std::array<char, 4> kCollectionSignature = {'G', 'C', 'O', 'L'};
constexpr std::array<char, 4> kLocalHeapSignature = {'H', 'E', 'A', 'P'};
constexpr std::uint64_t kHeaderBytes = 16;  // collection header and object header, both aligned to 8

std::uint64_t little_endian(const unsigned char* bytes, unsigned width) {
  std::uint64_t value = 0;
  for (unsigned i = width; i-- > 0;) value = value << 8 | bytes[i];
  return value;
}

std::uint64_t align8(std::uint64_t bytes) { return (bytes + 7) / 8 * 8; }

class FileBytes {
 public:
  explicit FileBytes(const std::filesystem::path& file) : path_(file), stream_(file, std::ios::binary) {
    std::error_code error;
    size_ = std::filesystem::file_size(file, error);
    if (error || !stream_) size_ = 0;
  }
  std::uint64_t size() const { return size_; }
  // Up to `count` bytes from `offset` (fewer at the end of the file).
  std::vector<unsigned char> read(std::uint64_t offset, std::uint64_t count) {
    if (offset >= size_) return {};
    std::vector<unsigned char> bytes(std::min(count, size_ - offset));
    stream_.clear();
    stream_.seekg(static_cast<std::streamoff>(offset));
    stream_.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    bytes.resize(static_cast<std::size_t>(std::max<std::streamsize>(stream_.gcount(), 0)));
    return bytes;
  }

 private:
  std::filesystem::path path_;
  std::ifstream stream_;
  std::uint64_t size_ = 0;
};

// The superblock's "size of lengths" (2, 4 or 8), or 0 when no superblock is found where HDF5
// looks for one.
unsigned size_of_lengths(FileBytes& file) {
  for (std::uint64_t at = 0; at + 16 <= file.size(); at = at == 0 ? 512 : at * 2) {
    const auto head = file.read(at, 16);
    if (head.size() < 16 || !std::equal(kSuperblockSignature.begin(), kSuperblockSignature.end(), head.begin(),
                                        [](char a, unsigned char b) { return static_cast<unsigned char>(a) == b; }))
      continue;
    const unsigned version = head[8];
    const unsigned lengths = version <= 1 ? head[14] : head[10];
    return lengths == 2 || lengths == 4 || lengths == 8 ? lengths : 0;
  }
  return 0;
}

// Where the file's heaps begin, found in one pass over its bytes: each 8-byte block header of a
// global heap collection ("GCOL", version 1) and of a local heap ("HEAP", version 0), a signature,
// its version and three zero bytes.
struct HeapHeaders {
  std::vector<std::uint64_t> collections, local_heaps;
};
HeapHeaders heap_headers(FileBytes& file) {
  const auto header_at = [](const unsigned char* bytes, const std::array<char, 4>& signature, unsigned char version) {
    return std::memcmp(bytes, signature.data(), 4) == 0 && bytes[4] == version && bytes[5] == 0 && bytes[6] == 0 &&
           bytes[7] == 0;
  };
  constexpr std::uint64_t kBlock = 1 << 20;
  HeapHeaders found;
  for (std::uint64_t start = 0; start < file.size(); start += kBlock) {
    const auto bytes = file.read(start, kBlock + 7);  // 7 bytes of overlap with the next block
    for (std::size_t i = 0; i + 8 <= bytes.size() && i < kBlock; ++i) {
      if (bytes[i] == 'G' && header_at(&bytes[i], kCollectionSignature, 1)) found.collections.push_back(start + i);
      if (bytes[i] == 'H' && header_at(&bytes[i], kLocalHeapSignature, 0)) found.local_heaps.push_back(start + i);
    }
  }
  return found;
}

// A global heap collection walked as libhdf5 walks it; UserError at the first object that does
// not fit it or would not advance the walk.
void check_collection(FileBytes& file, const std::filesystem::path& path, std::uint64_t at, unsigned lengths) {
  const auto header = file.read(at, kHeaderBytes);
  if (header.size() < 8 + lengths) return;  // cut short: libhdf5 fails to read it, cleanly
  const std::uint64_t collection_bytes = little_endian(&header[8], lengths);
  const auto damaged = [&](const std::string& what) {
    throw UserError(fmt::format("{} is damaged: the global heap collection at byte {} {}", path.string(), at, what));
  };
  if (collection_bytes < kHeaderBytes) damaged(fmt::format("claims {} bytes, less than its header", collection_bytes));
  const auto heap = file.read(at, collection_bytes);  // what the file holds of it
  const std::uint64_t end = collection_bytes;         // offsets below are from `at`
  std::uint64_t object = kHeaderBytes;
  while (object < end) {
    if (object + kHeaderBytes > end) break;  // the tail too short for an object is free space
    if (object + kHeaderBytes > heap.size()) break;  // beyond the end of the file: libhdf5's read fails
    const std::uint64_t index = little_endian(&heap[object], 2);
    const std::uint64_t size = little_endian(&heap[object + 8], lengths);
    if (size > end) damaged(fmt::format("holds object {} of {} bytes, more than the collection (HDF5 would read past it)",
                                     index, size));
    const std::uint64_t need = index > 0 ? kHeaderBytes + align8(size) : size;
    if (need == 0) damaged("holds an empty free-space object (HDF5 would loop on it forever)");
    if (object + need > end)
      damaged(fmt::format("holds object {} of {} bytes at byte {}, past the collection's {} bytes (HDF5 would "
                          "read past it)",
                          index, size, at + object, collection_bytes));
    object += need;
  }
}

// A local heap's prefix ("HEAP", version 0, three reserved bytes, data segment size in "size of
// lengths" bytes); UserError when the segment it claims is larger than the file.
void check_local_heap(FileBytes& file, const std::filesystem::path& path, std::uint64_t at, unsigned lengths) {
  const auto header = file.read(at, 8 + lengths);
  if (header.size() < 8 + lengths) return;  // cut short: libhdf5 fails to read it, cleanly
  const std::uint64_t segment_bytes = little_endian(&header[8], lengths);
  if (segment_bytes > file.size())
    throw UserError(fmt::format("{} is damaged: the local heap at byte {} claims a data segment of {} bytes, more "
                                "than the file's {} (HDF5 would allocate it before reading)",
                                path.string(), at, segment_bytes, file.size()));
}

}  // namespace

void check_heaps(const std::filesystem::path& path) {
  FileBytes file(path);
  const unsigned lengths = size_of_lengths(file);
  if (lengths == 0) return;
  const HeapHeaders found = heap_headers(file);
  for (const std::uint64_t at : found.local_heaps) check_local_heap(file, path, at, lengths);
  for (const std::uint64_t at : found.collections) check_collection(file, path, at, lengths);
}

}  // namespace sb::io
