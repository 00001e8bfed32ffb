// SPDX-License-Identifier: Apache-2.0
// IDX and CSV image loaders with size checks; the per-epoch shuffled batcher.
#include "data/image_dataset.hpp"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <sstream>

#include "core/check.hpp"
#include "core/rng.hpp"

namespace sb::data {

namespace {

constexpr std::uint64_t kShuffleStream = 0x1D70'0001;

// The whole file, decompressed when it is gzip (zlib reads plain files unchanged).
std::vector<std::uint8_t> read_maybe_gzip(const std::filesystem::path& path) {
  SB_USER_CHECK(std::filesystem::is_regular_file(path),
                "data file '{}' does not exist (run scripts/setup.sh, or set data.path or SB_DATA_DIR)",
                path.string());
  gzFile file = gzopen(path.c_str(), "rb");
  SB_USER_CHECK(file != nullptr, "cannot open data file '{}'", path.string());
  std::vector<std::uint8_t> bytes;
  std::array<std::uint8_t, 1 << 16> chunk{};
  int n = 0;
  while ((n = gzread(file, chunk.data(), static_cast<unsigned>(chunk.size()))) > 0)
    bytes.insert(bytes.end(), chunk.begin(), chunk.begin() + n);
  int error = Z_OK;
  const std::string message = gzerror(file, &error);  // zlib's text lives in `file`: copy it before closing
  gzclose(file);
  SB_USER_CHECK(n == 0 && (error == Z_OK || error == Z_STREAM_END),
                "data file '{}' is corrupt or truncated ({})", path.string(), message);
  return bytes;
}

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

// Checks an IDX header: magic 0x0000 08 ND and ND dimensions; returns the dimensions.
std::vector<std::int64_t> idx_dimensions(const std::vector<std::uint8_t>& bytes, const std::filesystem::path& path,
                                         std::uint32_t expected_rank) {
  const std::uint32_t expected_magic = 0x00000800u | expected_rank;
  SB_USER_CHECK(bytes.size() >= 4 + 4 * expected_rank,
                "'{}' is too short ({} bytes) to be an IDX file", path.string(), bytes.size());
  const std::uint32_t magic = big_endian_u32(bytes, 0);
  SB_USER_CHECK(magic == expected_magic,
                "'{}' has magic number 0x{:08x} but an IDX {} file starts with 0x{:08x}", path.string(), magic,
                expected_rank == 3 ? "image" : "label", expected_magic);
  std::vector<std::int64_t> dims;
  for (std::uint32_t d = 0; d < expected_rank; ++d) dims.push_back(big_endian_u32(bytes, 4 + 4 * d));
  // Three 32-bit dimensions can overflow 64 bits: the promised size in 128.
  unsigned __int128 expected_size = 4 + 4 * expected_rank, payload = 1;
  for (const std::int64_t dim : dims) payload *= static_cast<std::uint64_t>(dim);
  expected_size += payload;
  SB_USER_CHECK(expected_size == bytes.size(), "'{}' is truncated or padded: its header promises {} bytes but it holds {}",
                path.string(), decimal(expected_size), bytes.size());
  return dims;
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
  const auto images = read_maybe_gzip(images_path);
  const auto labels = read_maybe_gzip(labels_path);
  const auto image_dims = idx_dimensions(images, images_path, 3);
  const auto label_dims = idx_dimensions(labels, labels_path, 1);
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
  const auto bytes = read_maybe_gzip(path);
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
