// SPDX-License-Identifier: Apache-2.0
// Writes the GEMM microbenchmark table of `scalebench calibrate --gemm` into a result file:
// /calibration/gemm, one row per (precision, shape). Leaves out measuring (calibrate/gemm_sweep.cpp)
// and reading (results_reader.hpp reads any table).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

namespace sb::io {

// One row of /calibration/gemm. Field names and order are the schema.
struct GemmRow {
  std::string precision;        // storage of A, B and C: "fp32", "bf16", "fp16" (accumulation fp32)
  std::string path;             // the kernel back-end: "cpu", "cuda"
  std::int64_t m = 0, n = 0, k = 0;  // C (m,n) = A (m,k) · B^T, B (n,k): 2·m·n·k FLOPs
  std::int64_t ranks = 0;       // ranks running the same GEMM at once (one per device or core set)
  std::int64_t threads = 0;     // threads of each rank
  std::int64_t iterations = 0;  // timed calls per round, after a warm-up
  double time_s = 0;            // mean seconds per call in the fastest round, the slowest rank's
  double tflops = 0;            // 2·m·n·k / time_s / 1e12, per rank
};

// Creates the file when missing and writes /calibration/gemm, replacing a table of that name;
// other content is kept. UserError for a file that is not a scalebench result file.
void write_gemm_table(const std::filesystem::path& file, std::span<const GemmRow> rows);

}  // namespace sb::io
