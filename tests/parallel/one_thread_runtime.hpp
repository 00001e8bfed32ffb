// SPDX-License-Identifier: Apache-2.0
// The Kokkos/OpenMP runtime of an MPI test binary: one thread per rank, since the ranks already
// share (and oversubscribe) the cores. Include it from one file of each test binary: the
// inline variable registers the environment once. Leaves out MPI itself (mpi_test_main.cpp).
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "runtime/parallel_runtime.hpp"

namespace sb::testing {

class OneThreadRuntime : public ::testing::Environment {
 public:
  void SetUp() override { runtime_ = std::make_unique<ParallelRuntime>(1); }
  void TearDown() override { runtime_.reset(); }

 private:
  std::unique_ptr<ParallelRuntime> runtime_;
};

inline ::testing::Environment* const one_thread_runtime_environment =
    ::testing::AddGlobalTestEnvironment(new OneThreadRuntime);

}  // namespace sb::testing
