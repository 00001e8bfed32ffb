// SPDX-License-Identifier: Apache-2.0
// A result file as one JSON document (`scalebench inspect --json`): the root's attributes and,
// per run, its attributes and those of its context, summary, prediction and compression groups,
// as results/README.md names them. Leaves out the tables (read them with h5py).
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

namespace sb::io {

// {"file", "schema_version", "generator", "runs": [{"id", "attributes": {...}, "context": {...},
// "summary": {...}, "prediction": {...}, "compression": {...}}]}: a group the run does not have
// is null; NaN is null; integer lists are arrays.
nlohmann::json results_json(const std::filesystem::path& file);

}  // namespace sb::io
