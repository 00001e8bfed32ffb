// SPDX-License-Identifier: Apache-2.0
// Benchmark suites (YAML, no code): a `base` case, an optional `matrix` of keys to sweep
// and an optional `cases` list, expanded into fully validated case configs before anything
// runs. Leaves out launching the cases (cli/command_run.cpp).
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "plan/run_plan.hpp"

namespace sb::plan {

struct SuiteCase {
  std::string id;       // unique within the suite: case name and matrix values
  YAML::Node config;    // base + case + matrix values; parses as a TrainConfig
  std::int64_t world_size = 1;
  RunPlan plan;  // what the case trains and is predicted as, on world_size ranks
  std::int64_t repeats = 1;  // runs of the case (`repeats:` of the case, else of the suite)
};

struct Suite {
  std::string name, description, source;
  std::vector<SuiteCase> cases;
};

// Expands and validates every case (unknown keys, bad values) and applies `overrides`
// (key=value) to each. `repeats` (a suite key, or a case's: 1 to 100) is how many times each case
// runs; `repeat_override` > 0 (run --repeat) replaces it for every case. Throws UserError naming
// the suite file and the case.
Suite load_suite(const std::filesystem::path& path, const std::vector<std::string>& overrides,
                 std::int64_t repeat_override = 0);

// The run id of repeat `repeat` (1-based) of a case run `repeats` times: the case id itself
// for a single run, else "<id>.r<repeat>".
std::string repeat_run_id(const std::string& case_id, std::int64_t repeat, std::int64_t repeats);

}  // namespace sb::plan
