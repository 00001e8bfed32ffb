// SPDX-License-Identifier: Apache-2.0
// Labelled image data sets for classification: MNIST and Fashion-MNIST (IDX, raw or gzip)
// and scikit-learn's 8×8 digits (CSV), verified against their published sizes, normalised,
// and served in per-epoch shuffled batches. Leaves out augmentation and colour images.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sb::data {

struct ImageDataset {
  std::string name;    // "mnist/train", "fashion-mnist/test", ...
  std::int64_t count = 0, channels = 1, height = 0, width = 0, classes = 10;
  std::vector<float> images;          // (count, channels, height, width), normalised
  std::vector<std::int32_t> labels;   // (count) in [0, classes)
  std::int64_t image_size() const { return channels * height * width; }
};

// Reads an IDX image file (magic 0x00000803, uint8 pixels) and its IDX label file (magic
// 0x00000801), raw or gzip; pixels become (x/255 - mean) / std. Throws UserError naming the
// file for a wrong magic number, truncation, a count mismatch or a label out of range.
ImageDataset load_idx_images(const std::string& name, const std::filesystem::path& images,
                             const std::filesystem::path& labels, double mean, double std);

// split: "train" (60000 images) or "test" (10000). Files {train,t10k}-{images-idx3,labels-idx1}-ubyte
// with or without ".gz" in `dir`. MNIST: mean 0.1307, std 0.3081; Fashion-MNIST: 0.2860, 0.3530.
ImageDataset load_mnist(const std::filesystem::path& dir, const std::string& split);
ImageDataset load_fashion_mnist(const std::filesystem::path& dir, const std::string& split);

// scikit-learn's digits.csv.gz: 1797 rows of 64 pixel values 0..16 and a label; pixels / 16.
ImageDataset load_digits(const std::filesystem::path& dir);

// Batches of a data set in an order reshuffled every epoch by a counter-based permutation
// keyed by (seed, epoch): batch b of epoch e is the same whatever the thread or rank count.
class ImageBatcher {
 public:
  ImageBatcher(const ImageDataset& data, std::int64_t batch, std::uint64_t seed, bool shuffle);
  std::int64_t batches_per_epoch() const;  // the last partial batch is dropped when shuffling
  // Global batch index g (counting across epochs) -> images (B, C, H, W), labels (B); returns B.
  std::int64_t batch(std::int64_t g, float* images, std::int32_t* labels);

 private:
  void prepare_epoch(std::int64_t epoch);
  const ImageDataset& data_;
  std::int64_t batch_;
  std::uint64_t seed_;
  bool shuffle_;
  std::int64_t epoch_ = -1;
  std::vector<std::int64_t> order_;
};

}  // namespace sb::data
