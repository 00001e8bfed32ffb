// SPDX-License-Identifier: Apache-2.0
// What the NCCL communicator says on a machine without a GPU (this one, CI): the queries agree
// with the build, and asking for the communicator is a UserError that says why, not a crash.
// Leaves out NCCL traffic (tests/cuda/test_nccl_communicator.cpp, on a GPU).
#include <gtest/gtest.h>

#include <regex>
#include <string>

#ifdef SB_EXPECT_NCCL
#include <cuda_runtime.h>
#endif

#include "core/check.hpp"
#include "parallel/communicator.hpp"
#include "parallel/nccl_communicator.hpp"

namespace sb::parallel {
namespace {

int visible_gpus() {
#ifdef SB_EXPECT_NCCL
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

// The message of the UserError `call` throws ("(no UserError)" when it throws none).
template <class Call>
std::string user_error_of(Call call) {
  try {
    call();
  } catch (const UserError& error) {
    return error.what();
  }
  return "(no UserError)";
}

TEST(NcclAvailability, QueriesAgreeWithTheBuild) {
#ifdef SB_EXPECT_NCCL
  EXPECT_TRUE(nccl_compiled());
  // The library the build linked is the one whose header it found.
  EXPECT_EQ(nccl_version(), SB_EXPECT_NCCL);
  EXPECT_TRUE(std::regex_match(nccl_version(), std::regex(R"(\d+\.\d+\.\d+)"))) << nccl_version();
#else
  EXPECT_FALSE(nccl_compiled());
  EXPECT_EQ(nccl_version(), "not compiled");
#endif
  const std::string aware = cuda_aware_mpi();
  EXPECT_TRUE(aware == "yes" || aware == "no" || aware == "unknown") << aware;
}

TEST(NcclAvailability, CommunicatorWithoutGpuIsAUserError) {
  if (visible_gpus() > 0) GTEST_SKIP() << "a GPU is visible: tests/cuda exercises the communicator";
  const std::string message = user_error_of([] {
    // Collective (MPI_Comm_dup) on every rank; every rank fails the same way.
    make_nccl_communicator(make_mpi_world_communicator());
  });
#ifdef SB_EXPECT_NCCL
  EXPECT_NE(message.find("needs a CUDA GPU, but none is visible"), std::string::npos) << message;
#else
  EXPECT_NE(message.find("this build of scalebench has none"), std::string::npos) << message;
  EXPECT_NE(message.find("-DSB_ENABLE_NCCL=ON"), std::string::npos) << message;
#endif
  const std::string device_message = user_error_of([] { select_local_device(); });
  EXPECT_NE(device_message, "(no UserError)");
}

}  // namespace
}  // namespace sb::parallel
