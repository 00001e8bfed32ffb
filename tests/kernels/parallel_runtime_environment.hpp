// SPDX-License-Identifier: Apache-2.0
// Access to the test binary's one ParallelRuntime, for the tests of the runtime itself.
// Leaves out creating it: the global test environment does that before any test runs.
#pragma once

#include "runtime/parallel_runtime.hpp"

namespace sb::kernels::testing {

inline constexpr int kTestThreads = 2;

// The runtime the environment created (nullptr after destroy_test_runtime).
ParallelRuntime* test_runtime();
// Ends Kokkos for this process; only for a death test's child.
void destroy_test_runtime();

}  // namespace sb::kernels::testing
