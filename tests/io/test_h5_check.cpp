// SPDX-License-Identifier: Apache-2.0
// SB_H5_CHECK messages and H5Handle ownership.
// Leaves out the writer and reader (test_results_file.cpp, test_results_reader.cpp).
#include <gtest/gtest.h>

#include "io/h5_check.hpp"

namespace sb::io {
namespace {

TEST(H5Check, FailureNamesCallFileLineAndHost) {
  H5QuietErrors quiet;
  try {
    SB_H5_CHECK(H5Fopen("/nonexistent/scalebench.h5", H5F_ACC_RDONLY, H5P_DEFAULT));
    FAIL() << "expected sb::Error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("HDF5: "), std::string::npos) << message;
    EXPECT_NE(message.find("H5Fopen(\"/nonexistent/scalebench.h5\""), std::string::npos) << message;
    EXPECT_NE(message.find("test_h5_check.cpp:"), std::string::npos) << message;
    EXPECT_NE(message.find(where_am_i()), std::string::npos) << message;
    EXPECT_NE(message.find("unable to open file"), std::string::npos) << message;
  }
}

TEST(H5Check, PassesValuesThrough) {
  const hid_t space = SB_H5_CHECK(H5Screate(H5S_SCALAR));
  EXPECT_GE(space, 0);
  EXPECT_EQ(SB_H5_CHECK(H5Sclose(space)), 0);
}

TEST(H5Handle, ClosesOnceAndMoves) {
  hid_t id = H5I_INVALID_HID;
  {
    H5Handle first{SB_H5_CHECK(H5Screate(H5S_SCALAR)), H5Sclose};
    id = first.get();
    H5Handle second = std::move(first);
    EXPECT_FALSE(first);
    EXPECT_EQ(second.get(), id);
    EXPECT_GT(H5Iis_valid(id), 0);
    H5Handle third;
    third = std::move(second);
    EXPECT_GT(H5Iis_valid(id), 0);
  }
  H5QuietErrors quiet;
  EXPECT_LE(H5Iis_valid(id), 0);
}

TEST(H5QuietErrors, RestoresThePreviousHandler) {
  H5E_auto2_t before = nullptr;
  void* before_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &before, &before_data);
  {
    H5QuietErrors quiet;
    H5E_auto2_t inside = nullptr;
    void* inside_data = nullptr;
    H5Eget_auto2(H5E_DEFAULT, &inside, &inside_data);
    EXPECT_EQ(inside, nullptr);
  }
  H5E_auto2_t after = nullptr;
  void* after_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &after, &after_data);
  EXPECT_EQ(after, before);
}

}  // namespace
}  // namespace sb::io
