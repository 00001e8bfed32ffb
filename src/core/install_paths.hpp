// SPDX-License-Identifier: Apache-2.0
// Where the executable finds what it ships with (suites, site profiles, analysis scripts, specs)
// and what a site adds (data sets, its own site profiles): an installed scalebench reads them
// from <prefix>/share/scalebench beside its bin/, a build tree from the source tree it was
// built from (the fallback a developer's build uses). Environment variables override each one.
// Leaves out reading the files (their own readers).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace sb {

// The folder the shipped files are read from: SB_SHARE_DIR where set; else
// <dir of the executable>/../share/scalebench when it holds suites/quickstart.yaml (an
// install); else the source tree this binary was built from.
std::filesystem::path resource_dir();
// "SB_SHARE_DIR", "install" or "source tree": why resource_dir() is where it is.
std::string resource_dir_origin();

// The data sets' folder: SB_DATA_DIR where set, else resource_dir()/data.
std::filesystem::path datasets_dir();

// The folders a site profile name is looked up in, first match wins: SB_SITES_DIR where set
// (alone, as before); else the user's own ($XDG_CONFIG_HOME or ~/.config, then
// scalebench/sites) and then the shipped resource_dir()/jobs/sites.
std::vector<std::filesystem::path> site_profile_dirs();

// The folder of the running executable (/proc/self/exe); empty where it cannot be read.
std::filesystem::path executable_dir();

}  // namespace sb
