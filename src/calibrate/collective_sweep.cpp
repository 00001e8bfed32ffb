// SPDX-License-Identifier: Apache-2.0
// The collectives sweep (see collective_sweep.hpp): each benchmark is its calls at one size;
// the harness times them.
#include "calibrate/collective_sweep.hpp"

#include <algorithm>
#include <optional>

#include "measure/timing.hpp"
#include "parallel/bandwidth.hpp"
#include "parallel/mpi_check.hpp"
#include "parallel/ring.hpp"

namespace sb::calibrate {

namespace {

using parallel::Collective;

// The machines are shared: each path is timed in kRounds rounds, alternating with the other
// path, and the fastest round counts, so a neighbour's burst does not land on one path only.
constexpr int kRounds = 3;
constexpr int kLargeRounds = 2;  // from kLargeBytes on, where one call takes milliseconds
constexpr double kTargetSecondsPerRound = 0.02;
constexpr int kMinIterations = 1;
constexpr int kMaxIterations = 200;
constexpr std::int64_t kLargeBytes = 8 << 20;  // from here on one warm-up and one probe call

// What one benchmark needs for one size: every path's calls over the same buffers. `ring` is
// the ring algorithm data parallelism runs (parallel/ring.hpp), where the collective has one.
struct BenchmarkCalls {
  std::function<void()> ours;
  std::function<void()> raw;
  std::function<void()> ring;
};

struct Benchmark {
  const char* name;  // the table name under /calibration
  Collective collective;
  // Calls of `bytes` (the nccl-tests size) on float buffers, or nothing when the size does
  // not split into whole floats per rank.
  std::function<std::optional<BenchmarkCalls>(std::int64_t bytes)> prepare;
  // One call moves this many seconds' worth of one-way traffic per timed call (ping-pong: 2).
  int transfers_per_call = 1;
};

class CalibrationSweep {
 public:
  CalibrationSweep(parallel::Communicator& comm, MPI_Comm raw, std::int64_t max_bytes)
      : comm_(comm), raw_(raw), n_(comm.size()),
        // page-touched once, reused by every size (two full buffers: the largest all-gather)
        send_(static_cast<std::size_t>(std::max<std::int64_t>(max_bytes / 4, 1)), 0.0f),
        recv_(send_.size(), 0.0f) {}

  std::vector<Benchmark> benchmarks() {
    std::vector<Benchmark> list;
    list.push_back({"all_reduce", Collective::all_reduce, [this](std::int64_t bytes) {
                      const std::int64_t count = bytes / 4;
                      return std::optional<BenchmarkCalls>(BenchmarkCalls{
                          [this, count] { comm_.all_reduce(recv_.data(), count, parallel::DataType::f32, parallel::ReduceOp::sum); },
                          [this, count] {
                            SB_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, recv_.data(), static_cast<int>(count),
                                                       MPI_FLOAT, MPI_SUM, raw_));
                          },
                          [this, count] { parallel::ring_iall_reduce(comm_, recv_.data(), count, 1).wait(); }});
                    }});
    list.push_back({"reduce_scatter", Collective::reduce_scatter, [this](std::int64_t bytes) {
                      const std::int64_t count = bytes / 4 / n_;
                      if (count < 1) return std::optional<BenchmarkCalls>();
                      return std::optional<BenchmarkCalls>(BenchmarkCalls{
                          [this, count] {
                            comm_.reduce_scatter(send_.data(), recv_.data(), count, parallel::DataType::f32,
                                                 parallel::ReduceOp::sum);
                          },
                          [this, count] {
                            SB_MPI_CHECK(MPI_Reduce_scatter_block(send_.data(), recv_.data(), static_cast<int>(count),
                                                                  MPI_FLOAT, MPI_SUM, raw_));
                          },
                          [this, count] { parallel::ring_ireduce_scatter(comm_, send_.data(), count, 1).wait(); }});
                    }});
    list.push_back({"all_gather", Collective::all_gather, [this](std::int64_t bytes) {
                      const std::int64_t count = bytes / 4 / n_;
                      if (count < 1) return std::optional<BenchmarkCalls>();
                      return std::optional<BenchmarkCalls>(BenchmarkCalls{
                          [this, count] { comm_.all_gather(send_.data(), recv_.data(), count, parallel::DataType::f32); },
                          [this, count] {
                            SB_MPI_CHECK(MPI_Allgather(send_.data(), static_cast<int>(count), MPI_FLOAT,
                                                       recv_.data(), static_cast<int>(count), MPI_FLOAT, raw_));
                          },
                          [this, count] { parallel::ring_iall_gather(comm_, recv_.data(), count, 1).wait(); }});
                    }});
    // Ranks 0 and 1 bounce one message; the others only join the timing's barrier.
    list.push_back({"p2p", Collective::send, [this](std::int64_t bytes) {
                      const std::int64_t count = bytes / 4;
                      const int rank = comm_.rank();
                      return std::optional<BenchmarkCalls>(BenchmarkCalls{
                          [this, count, rank] {
                            if (rank == 0) {
                              comm_.send(send_.data(), count, parallel::DataType::f32, 1, 0);
                              comm_.recv(recv_.data(), count, parallel::DataType::f32, 1, 0);
                            } else if (rank == 1) {
                              comm_.recv(recv_.data(), count, parallel::DataType::f32, 0, 0);
                              comm_.send(send_.data(), count, parallel::DataType::f32, 0, 0);
                            }
                          },
                          [this, count, rank] {
                            const int c = static_cast<int>(count);
                            if (rank == 0) {
                              SB_MPI_CHECK(MPI_Send(send_.data(), c, MPI_FLOAT, 1, 0, raw_));
                              SB_MPI_CHECK(MPI_Recv(recv_.data(), c, MPI_FLOAT, 1, 0, raw_, MPI_STATUS_IGNORE));
                            } else if (rank == 1) {
                              SB_MPI_CHECK(MPI_Recv(recv_.data(), c, MPI_FLOAT, 0, 0, raw_, MPI_STATUS_IGNORE));
                              SB_MPI_CHECK(MPI_Send(send_.data(), c, MPI_FLOAT, 0, 0, raw_));
                            }
                          },
                          {}});  // no ring: the ping-pong is the link itself
                    },
                    2});
    return list;
  }

  // Every path at one size, taking turns round by round (measure/timing.hpp). A probe of the
  // raw call sets the iterations per round, which every path uses; time_s is the fastest
  // round's mean per call (the slowest rank's).
  std::vector<io::CalibrationRow> measure(const Benchmark& benchmark, std::int64_t bytes,
                                          const BenchmarkCalls& calls) {
    const bool large = bytes >= kLargeBytes;
    const int warmups = large ? 1 : 5;
    std::vector<std::function<void()>> paths = {calls.raw, calls.ours};
    if (calls.ring) paths.push_back(calls.ring);
    measure::MpiClock clock(raw_);
    measure::warm_up(paths, warmups, clock);
    // the same on every rank: the probe is the slowest rank's
    const double probe =
        measure::time_rounds(calls.raw, {.warmups = 0, .rounds = 1, .iterations = large ? 1 : 5}, clock)[0];
    const int iterations = measure::count_to_fill(kTargetSecondsPerRound, probe, kMinIterations, kMaxIterations);
    constexpr const char* kPathNames[3] = {"mpi", "scalebench", "ring"};
    const std::vector<std::vector<double>> rounds = measure::time_in_turns(
        paths, {.warmups = 0, .rounds = large ? kLargeRounds : kRounds, .iterations = iterations}, clock);
    comm_.stats().clear();  // our records of the sweep are not kept; the table is the result
    const int ranks = benchmark.collective == Collective::send ? 2 : n_;
    std::vector<io::CalibrationRow> rows;
    for (std::size_t path = 0; path < paths.size(); ++path) {
      const double best = measure::statistics_of(rounds[path]).min / benchmark.transfers_per_call;
      const parallel::Bandwidth bandwidth = parallel::collective_bandwidth(benchmark.collective, bytes, ranks, best);
      rows.push_back({bytes, ranks, kPathNames[path], iterations, best, bandwidth.algbw_gbps, bandwidth.busbw_gbps});
    }
    return rows;
  }

 private:
  parallel::Communicator& comm_;
  MPI_Comm raw_;
  int n_;
  std::vector<float> send_, recv_;
};

}  // namespace

std::vector<std::int64_t> sweep_sizes(std::int64_t min_bytes, std::int64_t max_bytes) {
  std::vector<std::int64_t> sizes;
  std::int64_t size = 1;
  while (size < min_bytes) size *= 2;
  for (; size <= max_bytes; size *= 2) sizes.push_back(size);
  return sizes;
}

void run_collective_sweep(parallel::Communicator& comm, MPI_Comm raw, const CollectiveSweepOptions& options,
                          const SizeMeasured& size_measured, const TableMeasured& table_measured) {
  CalibrationSweep sweep(comm, raw, options.max_bytes);
  for (const Benchmark& benchmark : sweep.benchmarks()) {
    if (!options.collectives.empty() &&
        std::find(options.collectives.begin(), options.collectives.end(), benchmark.name) == options.collectives.end())
      continue;
    std::vector<io::CalibrationRow> table;
    for (const std::int64_t bytes : sweep_sizes(options.min_bytes, options.max_bytes)) {
      const auto calls = benchmark.prepare(bytes);
      if (!calls) continue;
      const auto rows = sweep.measure(benchmark, bytes, *calls);
      table.insert(table.end(), rows.begin(), rows.end());
      size_measured(benchmark.name, bytes, rows);
    }
    table_measured(benchmark.name, table);
  }
}

}  // namespace sb::calibrate
