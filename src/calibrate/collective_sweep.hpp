// SPDX-License-Identifier: Apache-2.0
// The collectives sweep of `scalebench calibrate --out F.h5`: all-reduce, reduce-scatter,
// all-gather and a ping-pong between ranks 0 and 1 over power-of-two sizes, through scalebench's
// Communicator, the raw MPI call and (where data parallelism has one) the ring algorithm side by
// side, each size timed on the measurement harness (measure/timing.hpp). Leaves out printing and
// writing the tables (command_calibrate.cpp, io/calibration_table.hpp).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "io/calibration_table.hpp"
#include "parallel/communicator.hpp"

namespace sb::calibrate {

struct CollectiveSweepOptions {
  std::int64_t min_bytes = 4;
  std::int64_t max_bytes = std::int64_t{256} << 20;
  std::vector<std::string> collectives;  // all_reduce, reduce_scatter, all_gather, p2p; empty: all
};

// The powers of two in [min_bytes, max_bytes].
std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes);

// After each size of a benchmark, on every rank: its rows, the paths in the order mpi,
// scalebench[, ring].
using SizeMeasured = std::function<void(const std::string& benchmark, std::int64_t bytes,
                                        const std::vector<io::CalibrationRow>& rows)>;
// After each benchmark: its table (every size's rows), named as under /calibration.
using TableMeasured = std::function<void(const std::string& benchmark, const std::vector<io::CalibrationRow>& table)>;

// Collective over `comm`; `raw` is a duplicate of its MPI communicator for the raw calls and the
// timing's barriers and reductions.
void run_collective_sweep(parallel::Communicator& comm, MPI_Comm raw, const CollectiveSweepOptions& options,
                          const SizeMeasured& size_measured, const TableMeasured& table_measured);

}  // namespace sb::calibrate
