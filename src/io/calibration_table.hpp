// SPDX-License-Identifier: Apache-2.0
// Writes the microbenchmark tables of `scalebench calibrate` into a scalebench result file:
// /calibration/<collective>, one row per (size, path). Leaves out measuring (cli/
// command_calibrate.cpp) and reading (results_reader.hpp reads any table).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "io/attr_value.hpp"
#include "io/h5_check.hpp"
#include "io/record_table.hpp"

namespace sb::io {

// One row of /calibration/<collective>. Field names and order are the schema.
struct CalibrationRow {
  std::int64_t size_bytes = 0;  // the nccl-tests size of one call (parallel/bandwidth.hpp)
  std::int64_t ranks = 0;
  std::string path;             // "scalebench" (our Communicator) or "mpi" (the raw MPI call)
  std::int64_t iterations = 0;  // timed calls per round, after the warm-ups
  double time_s = 0;            // mean seconds per call in the fastest round, the slowest rank's
  double algbw_gbps = 0;
  double busbw_gbps = 0;
};

// Writes `records` as the table /calibration/<name> (record_table.hpp: packed little-endian),
// replacing one of that name, creating the file and group when missing; chunked and appendable
// like every scalebench table. The collective and GEMM tables (gemm_table.hpp) and a
// benchmark's rows all go through it.
void write_calibration_records(const std::filesystem::path& file, const std::string& name,
                               const RecordTable& records);

// Creates the file when missing (as ResultsFile::open_or_create does) and writes the table
// /calibration/<collective>, replacing one of that name. UserError for a file that is not a
// scalebench result file, or a path longer than 15 characters.
void write_calibration_table(const std::filesystem::path& file, const std::string& collective,
                             std::span<const CalibrationRow> rows);

// Sets attributes of /calibration (what the sweep ran on: metrics::collect_run_context plus
// the sweep's own settings), creating the file and group when missing.
void write_calibration_context(const std::filesystem::path& file, const Attributes& attributes);

}  // namespace sb::io
