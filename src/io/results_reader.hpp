// SPDX-License-Identifier: Apache-2.0
// Reads schema-1 result files: runs, attributes, table columns, and the text of
// `scalebench inspect`. Leaves out writing (results_file.hpp) and plotting (analysis/).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/attr_value.hpp"

namespace sb::io {

// Every function opens the file read-only and throws sb::UserError, naming the path, when it
// does not exist, is not HDF5, is not a scalebench result file ("X is not a scalebench result
// file (no schema_version attribute)"), or lacks the object or field asked for.

// Run ids under /runs, sorted by name.
std::vector<std::string> list_runs(const std::filesystem::path& file);
// The members of a group ("/repeats"), sorted by name; empty when the file has no such group.
std::vector<std::string> list_members(const std::filesystem::path& file, const std::string& group);

// object is an absolute path: "/", "/runs/<id>", "/runs/<id>/context", ".../summary".
Attributes read_attributes(const std::filesystem::path& file, const std::string& object);
AttrValue read_attribute(const std::filesystem::path& file, const std::string& object,
                         const std::string& name);
std::string read_string_attribute(const std::filesystem::path& file, const std::string& object,
                                  const std::string& name);
double read_number_attribute(const std::filesystem::path& file, const std::string& object,
                             const std::string& name);  // integers as double
bool has_object(const std::filesystem::path& file, const std::string& object);

// table is a dataset path such as "/runs/<id>/steps".
std::vector<std::string> list_fields(const std::filesystem::path& file, const std::string& table);
std::int64_t count_rows(const std::filesystem::path& file, const std::string& table);
// Any integer or float field, converted to double (exact for integers below 2^53).
std::vector<double> read_column(const std::filesystem::path& file, const std::string& table,
                                const std::string& field);
// A fixed-length string field (eval.split), trailing NULs removed.
std::vector<std::string> read_string_column(const std::filesystem::path& file,
                                            const std::string& table, const std::string& field);

// The text `scalebench inspect` prints: the file's schema version and generator, then per
// run its configuration, status, losses, throughput, memory and context.
std::string summarize_results(const std::filesystem::path& file);

}  // namespace sb::io
