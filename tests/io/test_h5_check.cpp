// SPDX-License-Identifier: Apache-2.0
// SB_H5_CHECK messages and H5Handle ownership.
// Leaves out the writer and reader (test_results_file.cpp, test_results_reader.cpp).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "core/storage_error.hpp"
#include "io/h5_check.hpp"
#include "io/h5_file_close.hpp"
#include "io/h5_objects.hpp"

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

// A file whose descriptor is then pointed at /dev/full, which answers every write with ENOSPC:
// the disk filled after the file was created.
TEST(H5Check, FullDiskIsAStorageErrorNamingTheFile) {
  H5QuietErrors quiet;
  const std::string path = ::testing::TempDir() + "h5_check_full_disk.h5";
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  ASSERT_GE(file, 0);
  void* handle = nullptr;
  ASSERT_GE(H5Fget_vfd_handle(file, H5P_DEFAULT, &handle), 0);
  const int full = open("/dev/full", O_WRONLY);
  ASSERT_GE(full, 0);
  ASSERT_GE(dup2(full, *static_cast<int*>(handle)), 0);
  close(full);
  try {
    h5_write_attribute(file, "status", std::string("failed"));
    SB_H5_CHECK(H5Fflush(file, H5F_SCOPE_GLOBAL));
    FAIL() << "expected sb::StorageError";
  } catch (const StorageError& error) {
    const std::string message = error.what();
    EXPECT_EQ(error.error_number(), ENOSPC);
    EXPECT_TRUE(error.out_of_space());
    EXPECT_EQ(error.path(), path);
    EXPECT_NE(message.find("cannot write the HDF5 file " + path + ": no space left on device (ENOSPC)"),
              std::string::npos) << message;
    EXPECT_NE(message.find("HDF5 H5Fflush at "), std::string::npos) << message;
    EXPECT_NE(message.find(where_am_i()), std::string::npos) << message;
  }
  // The close of a file whose writes fail succeeds (what it cannot write is discarded) and leaves
  // no id behind: a failed H5Fclose leaves one whose file HDF5 has freed, and the library's cleanup
  // at exit would close it again (the segmentation fault of issue 29).
  EXPECT_GE(h5_close_file(file), 0);
  EXPECT_LE(H5Iis_valid(file), 0);
  EXPECT_EQ(H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_FILE), 0);
  std::remove(path.c_str());
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
