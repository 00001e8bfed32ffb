// SPDX-License-Identifier: Apache-2.0
// MNIST, Fashion-MNIST and digits loaders on the installed files and on corrupted copies;
// the per-epoch shuffled batcher.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "core/check.hpp"
#include "data/image_dataset.hpp"
#include "tests/test_support.hpp"

namespace sb::data {
namespace {

namespace fs = std::filesystem;

double mean_of(const std::vector<float>& v) {
  return std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const UserError& e) {
    return e.what();
  }
  return "no error";
}

class ScratchDir {
 public:
  ScratchDir() : dir_(fs::temp_directory_path() / ("sb_data_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~ScratchDir() { fs::remove_all(dir_); }
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

TEST(Mnist, BothSplitsLoadWithPublishedSizesAndNormalisation) {
  const auto train = load_mnist(sb::testing::test_data_dir() / "mnist", "train");
  const auto test = load_mnist(sb::testing::test_data_dir() / "mnist", "test");
  EXPECT_EQ(train.count, 60000);
  EXPECT_EQ(test.count, 10000);
  EXPECT_EQ(train.images.size(), 60000u * 784u);
  EXPECT_NEAR(mean_of(train.images), 0.0, 1e-3);  // (x/255 - 0.1307)/0.3081 has mean ~0
  EXPECT_EQ(train.labels[0], 5);                  // the famous first MNIST digit
  std::vector<int> per_class(10);
  for (auto l : test.labels) ++per_class[static_cast<std::size_t>(l)];
  EXPECT_EQ(per_class[1], 1135);                  // test-set class counts are published
}

TEST(FashionMnist, GzipFilesLoad) {
  const auto test = load_fashion_mnist(sb::testing::test_data_dir() / "fashion-mnist", "test");
  EXPECT_EQ(test.count, 10000);
  EXPECT_NEAR(mean_of(test.images), 0.0, 0.02);
  std::vector<int> per_class(10);
  for (auto l : test.labels) ++per_class[static_cast<std::size_t>(l)];
  for (int c : per_class) EXPECT_EQ(c, 1000);     // Fashion-MNIST's test set is balanced
}

TEST(Digits, CsvLoads) {
  const auto d = load_digits(sb::testing::test_data_dir() / "digits");
  EXPECT_EQ(d.count, 1797);
  EXPECT_EQ(d.height, 8);
  EXPECT_EQ(d.labels[0], 0);
  for (float x : d.images) ASSERT_TRUE(x >= 0 && x <= 1);
}

TEST(Idx, CorruptFilesAreNamedInOneSentence) {
  ScratchDir scratch;
  const auto dir = scratch.path();
  fs::copy(sb::testing::test_data_dir() / "mnist" / "t10k-images-idx3-ubyte", dir / "t10k-images-idx3-ubyte");
  fs::copy(sb::testing::test_data_dir() / "mnist" / "t10k-labels-idx1-ubyte", dir / "t10k-labels-idx1-ubyte");
  // Truncated images.
  fs::resize_file(dir / "t10k-images-idx3-ubyte", 1000);
  EXPECT_NE(message_of([&] { load_mnist(dir, "test"); }).find("is truncated or padded: its header promises 7840016 bytes but it holds 1000"),
            std::string::npos);
  // Wrong magic.
  fs::copy(sb::testing::test_data_dir() / "mnist" / "t10k-images-idx3-ubyte", dir / "t10k-images-idx3-ubyte",
           fs::copy_options::overwrite_existing);
  {
    std::fstream f(dir / "t10k-images-idx3-ubyte", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(3);
    f.put(0x01);
  }
  EXPECT_NE(message_of([&] { load_mnist(dir, "test"); }).find("has magic number 0x00000801 but an IDX image file starts with 0x00000803"),
            std::string::npos);
  // Label count mismatch: labels of the training set beside test images.
  fs::copy(sb::testing::test_data_dir() / "mnist" / "t10k-images-idx3-ubyte", dir / "t10k-images-idx3-ubyte",
           fs::copy_options::overwrite_existing);
  fs::copy(sb::testing::test_data_dir() / "mnist" / "train-labels-idx1-ubyte", dir / "t10k-labels-idx1-ubyte",
           fs::copy_options::overwrite_existing);
  EXPECT_NE(message_of([&] { load_mnist(dir, "test"); }).find("holds 10000 images but"), std::string::npos);
  // A label out of range.
  fs::copy(sb::testing::test_data_dir() / "mnist" / "t10k-labels-idx1-ubyte", dir / "t10k-labels-idx1-ubyte",
           fs::copy_options::overwrite_existing);
  {
    std::fstream f(dir / "t10k-labels-idx1-ubyte", std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(8 + 17);
    f.put(static_cast<char>(42));
  }
  EXPECT_NE(message_of([&] { load_mnist(dir, "test"); }).find("has label 42 at index 17"), std::string::npos);
  // A corrupt gzip stream.
  {
    std::ofstream f(dir / "bad.gz", std::ios::binary);
    const unsigned char header[] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03, 0xde, 0xad, 0xbe, 0xef};
    f.write(reinterpret_cast<const char*>(header), sizeof header);
  }
  EXPECT_NE(message_of([&] { load_idx_images("x", dir / "bad.gz", dir / "bad.gz", 0, 1); }).find("corrupt or truncated"),
            std::string::npos);
  EXPECT_NE(message_of([&] { load_mnist(dir / "nowhere", "test"); }).find("does not exist"), std::string::npos);
}

TEST(ImageBatcher, EachEpochIsAPermutationReshuffledPerEpoch) {
  ImageDataset d;
  d.name = "toy";
  d.count = 10;
  d.height = d.width = 1;
  for (int i = 0; i < 10; ++i) {
    d.images.push_back(static_cast<float>(i));
    d.labels.push_back(i);
  }
  ImageBatcher batcher(d, 3, 7, true), again(d, 3, 7, true);
  EXPECT_EQ(batcher.batches_per_epoch(), 3);
  std::vector<int> epoch0, epoch1;
  float images[3];
  std::int32_t labels[3];
  for (int b = 0; b < 6; ++b) {
    ASSERT_EQ(batcher.batch(b, images, labels), 3);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(images[i], static_cast<float>(labels[i]));
      (b < 3 ? epoch0 : epoch1).push_back(labels[i]);
    }
  }
  EXPECT_EQ(std::set<int>(epoch0.begin(), epoch0.end()).size(), 9u);  // no repeats within an epoch
  EXPECT_NE(epoch0, epoch1);
  std::vector<int> replay;
  for (int b = 3; b < 6; ++b) {  // random access into epoch 1 gives the same batches
    again.batch(b, images, labels);
    replay.insert(replay.end(), labels, labels + 3);
  }
  EXPECT_EQ(replay, epoch1);
  ImageBatcher in_order(d, 4, 7, false);
  EXPECT_EQ(in_order.batches_per_epoch(), 3);
  EXPECT_EQ(in_order.batch(2, images, labels), 2);  // the last partial batch is served
  EXPECT_EQ(labels[0], 8);
}

}  // namespace
}  // namespace sb::data
