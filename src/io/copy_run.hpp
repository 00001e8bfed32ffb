// SPDX-License-Identifier: Apache-2.0
// Merging result files: copies a run group from one scalebench result file into another
// (how `run` gathers its per-case files into DIR/<suite>.h5). Leaves out schema upgrades.
#pragma once

#include <filesystem>
#include <string>

namespace sb::io {

// Copies /runs/<run_id> of `from` into `to` (created as a scalebench file if absent),
// replacing a run of the same id there.
void copy_run(const std::filesystem::path& from, const std::filesystem::path& to,
              const std::string& run_id);

}  // namespace sb::io
