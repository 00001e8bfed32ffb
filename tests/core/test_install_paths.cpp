// SPDX-License-Identifier: Apache-2.0
// Where an installed or a build-tree scalebench reads its files from, and what the environment
// overrides (core/install_paths.hpp).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <optional>
#include <string>

#include "core/install_paths.hpp"

namespace {

namespace fs = std::filesystem;

// Sets (or, with nullopt, unsets) one variable for the scope of a test.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnvironment() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(InstallPaths, ATestBinaryOutsideAnInstallReadsTheSourceTree) {
  ScopedEnvironment share("SB_SHARE_DIR", std::nullopt);
  EXPECT_EQ(sb::resource_dir(), fs::path(SB_SOURCE_DIR));
  EXPECT_EQ(sb::resource_dir_origin(), "source tree");
  EXPECT_FALSE(sb::executable_dir().empty());
}

TEST(InstallPaths, ShareDirAndDataDirOverride) {
  ScopedEnvironment share("SB_SHARE_DIR", "/opt/site/share/scalebench");
  ScopedEnvironment data("SB_DATA_DIR", std::nullopt);
  EXPECT_EQ(sb::resource_dir(), fs::path("/opt/site/share/scalebench"));
  EXPECT_EQ(sb::resource_dir_origin(), "SB_SHARE_DIR");
  EXPECT_EQ(sb::datasets_dir(), fs::path("/opt/site/share/scalebench/data"));
  ScopedEnvironment data_set("SB_DATA_DIR", "/scratch/datasets");
  EXPECT_EQ(sb::datasets_dir(), fs::path("/scratch/datasets"));
}

TEST(InstallPaths, UserSiteProfilesComeBeforeTheShippedOnes) {
  ScopedEnvironment sites("SB_SITES_DIR", std::nullopt);
  ScopedEnvironment share("SB_SHARE_DIR", "/p/share/scalebench");
  {
    ScopedEnvironment config("XDG_CONFIG_HOME", "/home/u/.cfg");
    const auto dirs = sb::site_profile_dirs();
    ASSERT_EQ(dirs.size(), 2u);
    EXPECT_EQ(dirs[0], fs::path("/home/u/.cfg/scalebench/sites"));
    EXPECT_EQ(dirs[1], fs::path("/p/share/scalebench/jobs/sites"));
  }
  {
    ScopedEnvironment config("XDG_CONFIG_HOME", std::nullopt);
    ScopedEnvironment home("HOME", "/home/v");
    EXPECT_EQ(sb::site_profile_dirs().front(), fs::path("/home/v/.config/scalebench/sites"));
  }
  ScopedEnvironment only("SB_SITES_DIR", "/etc/scalebench/sites");
  EXPECT_EQ(sb::site_profile_dirs(), std::vector<fs::path>{"/etc/scalebench/sites"});
}

}  // namespace
