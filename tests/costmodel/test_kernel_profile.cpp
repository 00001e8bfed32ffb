// SPDX-License-Identifier: Apache-2.0
// The kernel-time table a calibration writes and predictions read: lookups by shape (measured,
// interpolated, proportional beyond), by devices and busy ranks, and its CSV file, whose bad
// lines are named by file and line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/check.hpp"
#include "costmodel/kernel_profile.hpp"

namespace sb::costmodel {
namespace {

TEST(KernelProfile, MeasuredShapeInterpolatedSizeAndProportionBeyond) {
  KernelProfile p;
  p.add({"gelu_forward", "fp32", 1, 1, {1000}, 1000, 1e-6});
  p.add({"gelu_forward", "fp32", 1, 1, {100000}, 100000, 1e-3});
  p.add({"gelu_forward", "fp32", 2, 1, {1000}, 1000, 7e-7});
  p.add({"gelu_forward", "fp32", 1, 2, {1000}, 1000, 1.5e-6});  // two ranks busy on the node
  const auto at = [&](std::int64_t n, int devices = 1) {
    return p.seconds({"gelu_forward", {n}, static_cast<double>(n)}, "fp32", devices);
  };
  EXPECT_DOUBLE_EQ(*at(1000), 1e-6);
  EXPECT_DOUBLE_EQ(*at(1000, 2), 7e-7);
  EXPECT_NEAR(*at(10000), 1e-4 / std::sqrt(10.0), 1e-12);  // halfway in log size: geometric mean
  EXPECT_NEAR(*at(200000), 2e-3, 1e-12);
  EXPECT_NEAR(*at(100), 1e-7, 1e-15);
  EXPECT_FALSE(at(1000, 4).has_value());
  EXPECT_FALSE(p.seconds({"gelu_backward", {1000}, 1000}, "fp32", 1).has_value());
  EXPECT_TRUE(p.covers("fp32", 2));
  EXPECT_DOUBLE_EQ(*p.seconds({"gelu_forward", {1000}, 1000}, "fp32", 1, 2), 1.5e-6);
  EXPECT_TRUE(p.covers("fp32", 1, 2));
  EXPECT_FALSE(p.covers("fp32", 2, 2));
  EXPECT_FALSE(p.covers("bf16", 1));

  const auto file = std::filesystem::temp_directory_path() / "sb_kernel_profile_test.csv";
  p.save(file);
  const KernelProfile back = KernelProfile::load(file);
  ASSERT_EQ(back.times().size(), 4u);
  EXPECT_EQ(back.times()[3].ranks, 2);
  EXPECT_EQ(back.times()[1].shape, (std::vector<std::int64_t>{100000}));
  EXPECT_DOUBLE_EQ(*back.seconds({"gelu_forward", {10000}, 10000}, "fp32", 1), *at(10000));
  {
    std::ofstream bad(file);
    bad << "kernel,precision,devices,ranks,shape,size,seconds\ngelu_forward,fp32,one,1,1000,1000,1e-6\n";
  }
  try {
    KernelProfile::load(file);
    FAIL() << "a bad line loaded";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + ":2"), std::string::npos) << e.what();
  }
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace sb::costmodel
