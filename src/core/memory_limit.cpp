// SPDX-License-Identifier: Apache-2.0
// The cgroup files are read where this process's cgroup (/proc/self/cgroup) says it lives, and
// at the mount's root (inside a container the two are the same); "max" and v1's near-2^63
// "no limit" mean none. MemAvailable is the kernel's estimate of what can be allocated without
// swapping, page cache counted as free.
#include "core/memory_limit.hpp"

#include <algorithm>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "core/device_memory.hpp"

namespace sb {
namespace {

std::optional<double> read_limit_file(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return std::nullopt;
  try {
    const double bytes = std::stod(text);
    if (bytes <= 0 || bytes >= 1e18) return std::nullopt;  // v1 writes 2^63 rounded to pages for none
    return bytes;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The cgroup paths of this process: "0::/a/b" (v2) and "N:memory:/a/b" (v1).
std::vector<std::string> cgroup_limit_files() {
  std::vector<std::string> files;
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    const auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    const std::string controllers = line.substr(first + 1, second - first - 1), path = line.substr(second + 1);
    const std::string dir = path == "/" ? "" : path;
    if (controllers.empty()) files.push_back("/sys/fs/cgroup" + dir + "/memory.max");
    if (controllers.find("memory") != std::string::npos)
      files.push_back("/sys/fs/cgroup/memory" + dir + "/memory.limit_in_bytes");
  }
  files.push_back("/sys/fs/cgroup/memory.max");
  files.push_back("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  return files;
}

std::optional<double> mem_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    double kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  return std::nullopt;
}

}  // namespace

MemoryLimit host_memory_limit() {
  MemoryLimit limit;
  if (const auto available = mem_available()) limit = {*available, "MemAvailable in /proc/meminfo"};
  for (const std::string& file : cgroup_limit_files()) {
    const auto bytes = read_limit_file(file);
    if (bytes && (limit.bytes == 0 || *bytes < limit.bytes)) limit = {*bytes, "the cgroup limit " + file};
    if (bytes) break;  // the innermost cgroup that sets one
  }
  return limit;
}

MemoryLimit free_memory_on(Device device) {
  if (device == Device::cpu) return host_memory_limit();
  return {static_cast<double>(device_free_bytes()), "cudaMemGetInfo's free memory"};
}

}  // namespace sb
