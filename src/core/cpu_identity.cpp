// SPDX-License-Identifier: Apache-2.0
// The CPU as one line (see cpu_identity.hpp).
#include "core/cpu_identity.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace sb {

namespace {

// The value of the first "key<tabs>: value" line, or "".
std::string field(const std::string& cpuinfo, const std::string& key) {
  std::istringstream in(cpuinfo);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) break;  // the first processor's block ends at its blank line
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    if (name != key) continue;
    const auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

// /proc/cpuinfo's text, or "" where it cannot be read.
std::string read_cpuinfo() {
  std::ifstream file("/proc/cpuinfo");
  std::stringstream text;
  if (file) text << file.rdbuf();
  return text.str();
}

}  // namespace

std::string cpu_identity_of(const std::string& cpuinfo) {
  const std::string model_name = field(cpuinfo, "model name");
  if (model_name.empty()) return "unknown";
  return fmt::format("{} ({}, family {}, model {})", model_name, field(cpuinfo, "vendor_id"),
                     field(cpuinfo, "cpu family"), field(cpuinfo, "model"));
}

std::string cpu_identity() { return cpu_identity_of(read_cpuinfo()); }

std::string cpu_model_name() {
  const std::string name = field(read_cpuinfo(), "model name");
  return name.empty() ? "unknown" : name;
}

}  // namespace sb
