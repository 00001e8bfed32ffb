// SPDX-License-Identifier: Apache-2.0
// The ResNet reference's accuracy on real images, through the command users run: resnet-mini on
// MNIST and Fashion-MNIST, test accuracy on the full 10,000-image test sets read from the HDF5
// file. The acceptance floors are 99.0% within 3 epochs (MNIST) and 90.0% within 5 (Fashion);
// to keep CI short each test trains the shipped recipe with fewer epochs (the cosine schedule
// follows the epoch count), which meets its floor sooner.
#include <gtest/gtest.h>

#include "cli_harness.hpp"
#include "core/check.hpp"
#include "io/results_reader.hpp"

namespace sb::testing {
namespace {

// Test-set accuracy after the last epoch, and every epoch's, from the run's eval table.
std::vector<double> test_accuracy_per_epoch(const std::filesystem::path& file, const std::string& run) {
  const auto split = io::read_string_column(file, run + "/eval", "split");
  const auto accuracy = io::read_column(file, run + "/eval", "accuracy");
  std::vector<double> per_epoch;
  for (std::size_t i = 0; i < split.size(); ++i)
    if (split[i] == "test") per_epoch.push_back(accuracy[i]);
  return per_epoch;
}

void train_and_check(const std::string& config, std::size_t epochs, double floor) {
  SB_CHECK(epochs >= 1, "epochs");
  Scratch scratch;
  const auto out = scratch.path("resnet.h5");
  const auto r = scratch.run("train --config " + std::string(SB_SOURCE_DIR) + "/models/resnet/configs/" + config +
                             " --out " + out.string() + " --set threads=2 --set epochs=" + std::to_string(epochs));
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::string run = "/runs/resnet-mini";
  ASSERT_EQ(io::read_string_attribute(out, run, "status"), "ok");
  const auto accuracy = test_accuracy_per_epoch(out, run);
  ASSERT_EQ(accuracy.size(), epochs);  // one evaluation per epoch
  const auto step_time = io::read_column(out, run + "/steps", "step_time_s");
  const std::size_t steps_per_epoch = step_time.size() / epochs;
  for (std::size_t e = 0; e < accuracy.size(); ++e) {
    double seconds = 0;
    for (std::size_t i = e * steps_per_epoch; i < (e + 1) * steps_per_epoch; ++i) seconds += step_time[i];
    std::printf("%s epoch %zu: test accuracy %.2f%%, training time %.1f s\n", config.c_str(), e + 1,
                100 * accuracy[e], seconds);
  }
  std::printf("%s: median step %.1f ms, %.0f images/s\n", config.c_str(),
              1e3 * io::read_number_attribute(out, run + "/summary", "step_time_median_s"),
              io::read_number_attribute(out, run + "/summary", "samples_per_s"));
  ::testing::Test::RecordProperty("final_test_accuracy", std::to_string(accuracy.back()));
  EXPECT_GE(accuracy.back(), floor);
}

TEST(ResnetMiniMnist, AtLeast99PercentWithinTwoEpochs) { train_and_check("resnet-mini-mnist.yaml", 2, 0.990); }

TEST(ResnetMiniFashionMnist, AtLeast90PercentWithinThreeEpochs) {
  train_and_check("resnet-mini-fashion-mnist.yaml", 3, 0.900);
}

}  // namespace
}  // namespace sb::testing
