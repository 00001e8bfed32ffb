// SPDX-License-Identifier: Apache-2.0
// sb::ParallelRuntime: the thread counts it sets, what it reports, and its refusal to be
// created twice. Leaves out thread pinning (environment variables set by ctest).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>

#include "core/check.hpp"
#include "parallel_runtime_environment.hpp"

namespace sb::kernels::testing {
namespace {

TEST(ParallelRuntime, SetsKokkosAndBlasThreads) {
  ASSERT_NE(test_runtime(), nullptr);
  EXPECT_EQ(test_runtime()->threads(), kTestThreads);
  EXPECT_TRUE(Kokkos::is_initialized());
  EXPECT_EQ(Kokkos::DefaultHostExecutionSpace::concurrency(), kTestThreads);
  EXPECT_EQ(ParallelRuntime::blas_threads(), kTestThreads);
}

TEST(ParallelRuntime, DescribesItsLibraries) {
  EXPECT_EQ(ParallelRuntime::kokkos_version(), "3.4.1");
  EXPECT_EQ(ParallelRuntime::blas_description().rfind("OpenBLAS", 0), 0u)
      << ParallelRuntime::blas_description();
}

TEST(ParallelRuntime, RefusesASecondRuntime) {
  try {
    ParallelRuntime second(1);
    FAIL() << "a second runtime was created";
  } catch (const sb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("one per process"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ParallelRuntime(0), sb::Error);
  EXPECT_TRUE(Kokkos::is_initialized());
}

// In a child process: end the runtime, then try to start another. Kokkos forbids
// re-initialisation, so the runtime must say so instead of failing inside Kokkos.
TEST(ParallelRuntimeDeathTest, RefusesToRestartAfterDestruction) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        destroy_test_runtime();
        try {
          ParallelRuntime again(1);
        } catch (const sb::Error& e) {
          std::fprintf(stderr, "%s\n", e.what());
          std::_Exit(3);
        }
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(3), "cannot be re-initialised");
}

}  // namespace
}  // namespace sb::kernels::testing
