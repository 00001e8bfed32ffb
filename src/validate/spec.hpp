// SPDX-License-Identifier: Apache-2.0
// The procurement spec of `scalebench validate`: a YAML file of named claims, each a
// measurement (GEMM TFLOP/s, bus bandwidth, throughput, MFU, scaling efficiency) and a
// tolerance. Parses and checks the file; leaves out measuring and judging (claims.hpp).
// The format is documented in jobs/specs/README.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace sb::validate {

enum class Measure {
  gemm_tflops,         // best /calibration/gemm tflops of a precision (and shape)
  busbw_gbps,          // /calibration/<collective> busbw at a size and number of ranks
  tokens_per_s,        // /runs/<run>/summary tokens_per_s
  samples_per_s,       // /runs/<run>/summary samples_per_s
  mfu,                 // /runs/<run>/summary mfu (a fraction)
  scaling_efficiency,  // (samples_per_s / world_size) of `scaled` over that of `base`
};

// The spec key that names a measure ("gemm_tflops", ...).
const char* measure_key(Measure measure);

enum class Tolerance {
  at_least,      // measured >= bound
  at_least_pct,  // measured >= claimed * bound / 100
  within_pct,    // |measured - claimed| <= claimed * bound / 100
};

const char* tolerance_key(Tolerance tolerance);

struct Claim {
  std::string name;  // the key under `claims:`
  Measure measure = Measure::tokens_per_s;
  // What the measure selects; fields not used by the measure stay empty/zero.
  std::string run;                // tokens_per_s, samples_per_s, mfu
  std::string base, scaled;       // scaling_efficiency
  std::string precision;          // gemm_tflops
  std::int64_t m = 0, n = 0, k = 0;  // gemm_tflops: 0 = any shape
  std::string collective;         // busbw_gbps: all_reduce, reduce_scatter, all_gather, p2p
  std::int64_t size_bytes = 0;    // busbw_gbps
  std::int64_t ranks = 0;         // busbw_gbps
  std::string path;               // busbw_gbps, gemm_tflops: the table's path column ("" = any for gemm)
  std::optional<double> claimed;  // the vendor's figure, in the measure's unit
  Tolerance tolerance = Tolerance::at_least;
  double bound = 0;               // at_least: a value; *_pct: a percentage
  std::string source;             // optional free text: where the figure comes from
};

struct Spec {
  std::string name;
  std::string description;
  std::vector<Claim> claims;  // in file order
};

// Reads and checks a spec. UserError naming the file and the key for unknown keys, missing
// or doubled measures and tolerances, values of the wrong type, and sizes that do not parse.
Spec load_spec(const std::filesystem::path& file);

// "4", "64KiB", "1MiB", "2GiB", "1GB" (powers of 1000) → bytes; nullopt when it does not parse.
std::optional<std::int64_t> parse_size(const std::string& text);

}  // namespace sb::validate
