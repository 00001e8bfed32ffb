// SPDX-License-Identifier: Apache-2.0
// Resource folders of an installed or a build-tree scalebench.
#include "core/install_paths.hpp"

#include <cstdlib>
#include <system_error>

namespace sb {

namespace {

namespace fs = std::filesystem;

const char* environment(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

// <exe>/../share/scalebench when it looks like an install of this project
fs::path installed_resource_dir() {
  const fs::path exe = executable_dir();
  if (exe.empty()) return {};
  const fs::path share = exe.parent_path() / "share" / "scalebench";
  std::error_code ec;
  return fs::is_regular_file(share / "suites" / "quickstart.yaml", ec) ? share : fs::path{};
}

}  // namespace

fs::path executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path{} : exe.parent_path();
}

fs::path resource_dir() {
  if (const char* dir = environment("SB_SHARE_DIR")) return dir;
  if (fs::path installed = installed_resource_dir(); !installed.empty()) return installed;
  return SB_SOURCE_DIR;
}

std::string resource_dir_origin() {
  if (environment("SB_SHARE_DIR")) return "SB_SHARE_DIR";
  return installed_resource_dir().empty() ? "source tree" : "install";
}

fs::path datasets_dir() {
  if (const char* dir = environment("SB_DATA_DIR")) return dir;
  return resource_dir() / "data";
}

std::vector<fs::path> site_profile_dirs() {
  if (const char* dir = environment("SB_SITES_DIR")) return {dir};
  std::vector<fs::path> dirs;
  if (const char* config = environment("XDG_CONFIG_HOME"))
    dirs.push_back(fs::path(config) / "scalebench" / "sites");
  else if (const char* home = environment("HOME"))
    dirs.push_back(fs::path(home) / ".config" / "scalebench" / "sites");
  dirs.push_back(resource_dir() / "jobs" / "sites");
  return dirs;
}

}  // namespace sb
