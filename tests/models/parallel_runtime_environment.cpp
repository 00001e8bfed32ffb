// SPDX-License-Identifier: Apache-2.0
// One sb::ParallelRuntime (Kokkos + OpenBLAS threads) for the whole test binary, as the cpu
// backend needs. Leaves out thread sweeps: ctest runs with OMP_NUM_THREADS=2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>

#include "runtime/parallel_runtime.hpp"

namespace {

class ParallelRuntimeEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* env = std::getenv("OMP_NUM_THREADS");
    const int threads = env ? std::max(1, std::atoi(env)) : 2;
    runtime_ = std::make_unique<sb::ParallelRuntime>(threads);
  }
  void TearDown() override { runtime_.reset(); }

 private:
  std::unique_ptr<sb::ParallelRuntime> runtime_;
};

[[maybe_unused]] ::testing::Environment* const kEnvironment =
    ::testing::AddGlobalTestEnvironment(new ParallelRuntimeEnvironment);

}  // namespace
