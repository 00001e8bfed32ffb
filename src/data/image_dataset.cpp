// SPDX-License-Identifier: Apache-2.0
// IDX and CSV image loaders with size checks; the per-epoch shuffled batcher.
#include "data/image_dataset.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "core/check.hpp"
#include "core/rng.hpp"
#include "data/data_file.hpp"

namespace sb::data {

namespace {

constexpr std::uint64_t kShuffleStream = 0x1D70'0001;

// An IDX file's header may promise at most this much: the largest data set read here (MNIST's
// training images) is 47 MB, and its floats take four times as much memory.
constexpr std::uint64_t kMaxIdxBytes = std::uint64_t{64} << 20;
// Bytes read past the promised size to say how padded a file is (a file may be endless).
constexpr std::uint64_t kPaddingShown = 1 << 16;
// A digits CSV is 290 KB uncompressed.
constexpr std::uint64_t kMaxDigitsBytes = std::uint64_t{16} << 20;

std::uint32_t big_endian_u32(const std::vector<std::uint8_t>& b, std::size_t at) {
  return (std::uint32_t{b[at]} << 24) | (std::uint32_t{b[at + 1]} << 16) | (std::uint32_t{b[at + 2]} << 8) | b[at + 3];
}

std::string decimal(unsigned __int128 value) {
  std::string digits;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(value % 10)));
    value /= 10;
  } while (value > 0);
  return digits;
}

struct IdxFile {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> bytes;  // header and payload
};

// An IDX file read against its own header: magic 0x0000 08 ND, ND big-endian uint32
// dimensions, then exactly their product of bytes. The header is checked before the payload
// is read, so a header promising more than kMaxIdxBytes is refused without reading it.
IdxFile read_idx(const std::filesystem::path& path, std::uint32_t expected_rank) {
  DataFile file(path);
  IdxFile idx;
  const std::uint64_t header = 4 + 4 * std::uint64_t{expected_rank};
  file.read(idx.bytes, header);
  SB_USER_CHECK(idx.bytes.size() == header, "'{}' is too short ({} bytes) to be an IDX file", path.string(),
                idx.bytes.size());
  const std::uint32_t expected_magic = 0x00000800u | expected_rank;
  const std::uint32_t magic = big_endian_u32(idx.bytes, 0);
  SB_USER_CHECK(magic == expected_magic,
                "'{}' has magic number 0x{:08x} but an IDX {} file starts with 0x{:08x}", path.string(), magic,
                expected_rank == 3 ? "image" : "label", expected_magic);
  // Three 32-bit dimensions can overflow 64 bits: the promised size in 128.
  unsigned __int128 promised = header;
  std::string shape;
  for (std::uint32_t d = 0; d < expected_rank; ++d) {
    idx.dims.push_back(big_endian_u32(idx.bytes, 4 + 4 * d));
    shape += (d ? " × " : "") + std::to_string(idx.dims.back());
  }
  unsigned __int128 payload = 1;
  for (const std::int64_t dim : idx.dims) payload *= static_cast<std::uint64_t>(dim);
  promised += payload;
  SB_USER_CHECK(promised <= kMaxIdxBytes,
                "'{}' has a header of {} that promises {} bytes, more than the {} MiB an IDX file may hold",
                path.string(), shape, decimal(promised), kMaxIdxBytes >> 20);
  const auto expected_size = static_cast<std::uint64_t>(promised);
  file.read(idx.bytes, expected_size - header + kPaddingShown);
  const bool endless = idx.bytes.size() == expected_size + kPaddingShown;
  SB_USER_CHECK(idx.bytes.size() == expected_size,
                "'{}' is truncated or padded: its header promises {} bytes but it holds {}{}", path.string(),
                expected_size, endless ? "more than " : "", endless ? expected_size + kPaddingShown - 1 : idx.bytes.size());
  return idx;
}

std::filesystem::path first_existing(const std::filesystem::path& dir, const std::string& stem) {
  for (const char* suffix : {"", ".gz"}) {
    const auto candidate = dir / (stem + suffix);
    if (std::filesystem::exists(candidate)) return candidate;
  }
  return dir / stem;  // reported as missing by the loader
}

ImageDataset load_idx_split(const std::string& name, const std::filesystem::path& dir, const std::string& split,
                            double mean, double std) {
  SB_USER_CHECK(split == "train" || split == "test", "unknown split '{}' of {} (known: train, test)", split, name);
  SB_USER_CHECK(std::filesystem::is_directory(dir),
                "{} data folder '{}' does not exist (run scripts/setup.sh, or set data.path or SB_DATA_DIR)", name,
                dir.string());
  const std::string prefix = split == "train" ? "train" : "t10k";
  ImageDataset d = load_idx_images(name + "/" + split, first_existing(dir, prefix + "-images-idx3-ubyte"),
                                   first_existing(dir, prefix + "-labels-idx1-ubyte"), mean, std);
  const std::int64_t expected = split == "train" ? 60000 : 10000;
  SB_USER_CHECK(d.count == expected && d.height == 28 && d.width == 28,
                "{} {} split in '{}' has {} images of {}×{} but should have {} of 28×28", name, split, dir.string(),
                d.count, d.height, d.width, expected);
  return d;
}

}  // namespace

ImageDataset load_idx_images(const std::string& name, const std::filesystem::path& images_path,
                             const std::filesystem::path& labels_path, double mean, double std) {
  const IdxFile image_file = read_idx(images_path, 3);
  const IdxFile label_file = read_idx(labels_path, 1);
  const std::vector<std::uint8_t>& images = image_file.bytes;
  const std::vector<std::uint8_t>& labels = label_file.bytes;
  const std::vector<std::int64_t>& image_dims = image_file.dims;
  const std::vector<std::int64_t>& label_dims = label_file.dims;
  SB_USER_CHECK(image_dims[0] == label_dims[0], "'{}' holds {} images but '{}' holds {} labels",
                images_path.string(), image_dims[0], labels_path.string(), label_dims[0]);
  ImageDataset d;
  d.name = name;
  d.count = image_dims[0];
  d.height = image_dims[1];
  d.width = image_dims[2];
  d.images.resize(static_cast<std::size_t>(d.count * d.image_size()));
  const float scale = static_cast<float>(1.0 / (255.0 * std)), shift = static_cast<float>(mean / std);
  for (std::size_t i = 0; i < d.images.size(); ++i) d.images[i] = static_cast<float>(images[16 + i]) * scale - shift;
  d.labels.resize(static_cast<std::size_t>(d.count));
  for (std::size_t i = 0; i < d.labels.size(); ++i) {
    d.labels[i] = labels[8 + i];
    SB_USER_CHECK(d.labels[i] < d.classes, "'{}' has label {} at index {} but the data set has {} classes",
                  labels_path.string(), d.labels[i], i, d.classes);
  }
  return d;
}

ImageDataset load_mnist(const std::filesystem::path& dir, const std::string& split) {
  return load_idx_split("mnist", dir, split, 0.1307, 0.3081);
}

ImageDataset load_fashion_mnist(const std::filesystem::path& dir, const std::string& split) {
  return load_idx_split("fashion-mnist", dir, split, 0.2860, 0.3530);
}

ImageDataset load_digits(const std::filesystem::path& dir) {
  const auto path = dir / "digits.csv.gz";
  const auto bytes = read_data_file(path, kMaxDigitsBytes);
  std::istringstream text(std::string(bytes.begin(), bytes.end()));
  ImageDataset d;
  d.name = "digits";
  d.height = d.width = 8;
  std::string line;
  std::int64_t row = 0;
  while (std::getline(text, line)) {
    if (line.empty()) continue;
    ++row;
    std::istringstream fields(line);
    std::string field;
    std::vector<double> values;
    while (std::getline(fields, field, ',')) {
      try {
        values.push_back(std::stod(field));
      } catch (const std::exception&) {
        throw UserError(fmt::format("'{}' line {}: '{}' is not a number", path.string(), row, field));
      }
    }
    SB_USER_CHECK(values.size() == 65, "'{}' line {} has {} values but a digits row has 64 pixels and a label",
                  path.string(), row, values.size());
    for (int p = 0; p < 64; ++p) d.images.push_back(static_cast<float>(values[static_cast<std::size_t>(p)] / 16.0));
    SB_USER_CHECK(values[64] >= 0 && values[64] <= 9 && values[64] == std::floor(values[64]),
                  "'{}' line {} has label {} but a digit label is an integer from 0 to 9", path.string(), row,
                  values[64]);
    const auto label = static_cast<std::int32_t>(values[64]);
    d.labels.push_back(label);
  }
  d.count = static_cast<std::int64_t>(d.labels.size());
  SB_USER_CHECK(d.count == 1797, "'{}' holds {} digits but scikit-learn's set has 1797", path.string(), d.count);
  return d;
}

ImageBatcher::ImageBatcher(const ImageDataset& data, std::int64_t batch, std::uint64_t seed, bool shuffle)
    : data_(data), batch_(batch), seed_(seed), shuffle_(shuffle) {
  SB_USER_CHECK(batch > 0 && batch <= data.count, "batch {} does not fit the {} images of {}", batch, data.count,
                data.name);
}

std::int64_t ImageBatcher::batches_per_epoch() const {
  return shuffle_ ? data_.count / batch_ : (data_.count + batch_ - 1) / batch_;
}

void ImageBatcher::prepare_epoch(std::int64_t epoch) {
  if (epoch == epoch_) return;
  epoch_ = epoch;
  order_.resize(static_cast<std::size_t>(data_.count));
  std::iota(order_.begin(), order_.end(), 0);
  if (!shuffle_) return;
  CounterRng(seed_ ^ (static_cast<std::uint64_t>(epoch) << 32), kShuffleStream).shuffle(order_.data(), order_.size());
}

std::int64_t ImageBatcher::batch(std::int64_t g, float* images, std::int32_t* labels) {
  const std::int64_t per_epoch = batches_per_epoch();
  prepare_epoch(g / per_epoch);
  const std::int64_t first = (g % per_epoch) * batch_;
  const std::int64_t count = std::min(batch_, data_.count - first);
  const std::int64_t size = data_.image_size();
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t source = order_[static_cast<std::size_t>(first + i)];
    std::memcpy(images + i * size, data_.images.data() + source * size, static_cast<std::size_t>(size) * sizeof(float));
    labels[i] = data_.labels[static_cast<std::size_t>(source)];
  }
  return count;
}

}  // namespace sb::data
