// SPDX-License-Identifier: Apache-2.0
// Kernel backends as gtest parameters: readable test names and ctest listings. Leaves out
// which backends exist (each suite instantiates the ones it runs).
#pragma once

#include <ostream>
#include <string>

#include "kernels/kernels.hpp"

namespace sb::kernels {

// gtest prints parameters through PrintTo; without it, ctest lists "4-byte object <00 ...>".
inline void PrintTo(Backend backend, std::ostream* os) { *os << to_string(backend); }

// For INSTANTIATE_TEST_SUITE_P: ".../reference", ".../cpu".
struct BackendName {
  template <class ParamInfo>
  std::string operator()(const ParamInfo& info) const { return std::string(to_string(info.param)); }
};

}  // namespace sb::kernels
