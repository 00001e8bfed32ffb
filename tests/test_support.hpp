// SPDX-License-Identifier: Apache-2.0
// What the tests that train on the real data sets share: where the data sets are, and the
// seconds elapsed for their progress lines. Header-only, no GoogleTest dependency.
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>

namespace sb::testing {

// The installed data sets: $SB_DATA_DIR as ctest sets it, else data/ of the checkout.
inline std::filesystem::path test_data_dir() {
  const char* dir = std::getenv("SB_DATA_DIR");
  return dir && *dir ? std::filesystem::path(dir) : std::filesystem::path(SB_SOURCE_DIR) / "data";
}

inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace sb::testing
