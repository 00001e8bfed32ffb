// SPDX-License-Identifier: Apache-2.0
// Post-training int8 quantisation of resnet-mini on real data: brief SGD training on MNIST
// (the first 50,000 training images), BatchNorm folded, activation ranges calibrated on 8
// held-out training batches (images 50,000..), then the full 10,000-image test set through the
// fp32 model (eval mode) and the int8 one (compress/post_training_quantization.hpp). Acceptance (issue 10): accuracy drop <= 0.5 points and
// weights >= 3.9× smaller as stored; the fp32 model must reach 97% for the comparison to mean
// something. Prints and records accuracies, sizes and both inference throughputs.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numbers>
#include <string>
#include <vector>

#include "compress/post_training_quantization.hpp"
#include "data/image_dataset.hpp"
#include "models/resnet/resnet.hpp"
#include "optim/sgd.hpp"
#include "tests/test_support.hpp"

namespace sb::compress {
namespace {

using i64 = std::int64_t;
using Clock = std::chrono::steady_clock;

// Images [begin, end) of a data set as a data set of their own.
data::ImageDataset slice(const data::ImageDataset& d, i64 begin, i64 end, const std::string& name) {
  data::ImageDataset s = d;
  s.name = name;
  s.count = end - begin;
  s.images.assign(d.images.begin() + begin * d.image_size(), d.images.begin() + end * d.image_size());
  s.labels.assign(d.labels.begin() + begin, d.labels.begin() + end);
  return s;
}

TEST(QuantizedResnetMnist, Int8WithinHalfAPointAndAtLeast3_9TimesSmaller) {
  constexpr i64 kBatch = 64, kSteps = 240, kWarmup = 24, kEvalBatch = 200, kCalibrationBatches = 8;
  const data::ImageDataset train_all = data::load_mnist(sb::testing::test_data_dir() / "mnist", "train");
  const data::ImageDataset test = data::load_mnist(sb::testing::test_data_dir() / "mnist", "test");
  const data::ImageDataset train = slice(train_all, 0, 50000, "mnist/train[:50000]");
  const data::ImageDataset heldout = slice(train_all, 50000, train_all.count, "mnist/train[50000:]");

  MemoryTracker tracker;
  const resnet::ResnetConfig config = resnet::resnet_config_by_name("resnet-mini");
  resnet::ResnetModel model(config, kEvalBatch, kernels::Backend::cpu, tracker);
  model.init_weights(1);
  optim::Sgd sgd(model.parameter_slices(), optim::SgdConfig{}, kernels::Backend::cpu, tracker);
  data::ImageBatcher batcher(train, kBatch, 1, true);
  std::vector<float> images(kBatch * train.image_size());
  std::vector<std::int32_t> labels(kBatch);
  const auto train_start = Clock::now();
  float loss = 0;
  for (i64 step = 0; step < kSteps; ++step) {  // lr 0.1: linear warm-up, cosine decay to 0
    const double lr = step < kWarmup ? 0.1 * (step + 1) / kWarmup
                                     : 0.05 * (1 + std::cos(std::numbers::pi * (step - kWarmup) / (kSteps - kWarmup)));
    const i64 N = batcher.batch(step, images.data(), labels.data());
    model.zero_grad();
    loss = model.forward(images.data(), labels.data(), N, true);
    model.backward();
    sgd.clip_and_step(lr);
  }
  std::printf("trained %lld steps of %lld in %.1f s, last loss %.4f\n", static_cast<long long>(kSteps),
              static_cast<long long>(kBatch), sb::testing::seconds_since(train_start), loss);

  const ImageSet calibration{heldout.images.data(), heldout.labels.data(), heldout.count, heldout.image_size()};
  const ImageSet test_set{test.images.data(), test.labels.data(), test.count, test.image_size()};
  const QuantizationReport r = quantize_resnet_int8(model, calibration, kCalibrationBatches, test_set);
  const double fp32_accuracy = r.fp32_metric, int8_accuracy = r.int8_metric;
  const double ratio = static_cast<double>(r.weight_bytes_fp32) / static_cast<double>(r.weight_bytes_int8);
  std::printf("MNIST test accuracy: fp32 %.2f%%, int8 %.2f%% (drop %.2f points)\n", 100 * fp32_accuracy,
              100 * int8_accuracy, 100 * (fp32_accuracy - int8_accuracy));
  std::printf("weights as stored: fp32 %lld bytes, int8 %lld bytes (%.3f× smaller); in memory: fp32 "
              "params %lld bytes (with running statistics), int8 params %lld bytes\n",
              static_cast<long long>(r.weight_bytes_fp32), static_cast<long long>(r.weight_bytes_int8), ratio,
              static_cast<long long>(tracker.usage().of(MemoryCategory::params)),
              static_cast<long long>(r.int8_params_in_memory));
  std::printf("inference on 10,000 images, batch %lld, %d thread(s): fp32 %.0f images/s, int8 %.0f images/s "
              "(%.2f×)\n", static_cast<long long>(kEvalBatch), Kokkos::DefaultHostExecutionSpace().concurrency(),
              r.fp32_samples_per_s, r.int8_samples_per_s,
              r.int8_samples_per_s / r.fp32_samples_per_s);
  ::testing::Test::RecordProperty("fp32_accuracy", std::to_string(fp32_accuracy));
  ::testing::Test::RecordProperty("int8_accuracy", std::to_string(int8_accuracy));
  ::testing::Test::RecordProperty("weight_bytes_ratio", std::to_string(ratio));
  ::testing::Test::RecordProperty("int8_over_fp32_throughput",
                                  std::to_string(r.int8_samples_per_s / r.fp32_samples_per_s));

  EXPECT_GE(fp32_accuracy, 0.97);
  EXPECT_LE(fp32_accuracy - int8_accuracy, 0.005);
  EXPECT_GE(ratio, 3.9);
  // That the int8 path ran is held by its bytes below, not by a changed accuracy: on 10,000
  // images its rounding moved one prediction on an EPYC and none on this AVX-512 Xeon (97.70% both)
  // 16 quantised layers (stem, 12 block and 2 shortcut convolutions, fc) keep their input scale
  // as a member, not in tracked memory
  EXPECT_EQ(r.int8_params_in_memory, r.weight_bytes_int8 - 4 * 16);
}

}  // namespace
}  // namespace sb::compress
