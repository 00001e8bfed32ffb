// SPDX-License-Identifier: Apache-2.0
// One sb::ParallelRuntime with two threads for the whole kernels test binary, as the cpu
// backend needs. Leaves out thread sweeps: determinism is checked at this one count.
#include "parallel_runtime_environment.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace sb::kernels::testing {
namespace {

class ParallelRuntimeEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { runtime_ = std::make_unique<ParallelRuntime>(kTestThreads); }
  void TearDown() override { runtime_.reset(); }
  std::unique_ptr<ParallelRuntime> runtime_;
};

ParallelRuntimeEnvironment* const environment = static_cast<ParallelRuntimeEnvironment*>(
    ::testing::AddGlobalTestEnvironment(new ParallelRuntimeEnvironment));

}  // namespace

ParallelRuntime* test_runtime() { return environment->runtime_.get(); }
void destroy_test_runtime() { environment->runtime_.reset(); }

}  // namespace sb::kernels::testing
