// SPDX-License-Identifier: Apache-2.0
// The CPU's feature flags as the kernel reports them (the "flags" line of /proc/cpuinfo), for
// the tests that hold the kernels' runtime dispatch against what the CPU has.
#pragma once

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace sb::kernels::testing {

inline std::set<std::string> cpu_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

}  // namespace sb::kernels::testing
