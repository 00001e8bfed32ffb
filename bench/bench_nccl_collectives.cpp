// SPDX-License-Identifier: Apache-2.0
// NCCL collectives through scalebench's communicator, as nccl-tests measures them: all_reduce
// (in place), all_gather and reduce_scatter of float buffers from 1 KiB to 1 GiB (the
// nccl-tests "size": bandwidth.hpp), time per call, algbw and busbw, slowest rank's time.
// Each size on the measurement harness (measure/timing.hpp): warm-up calls, then `iters`
// non-blocking calls issued back to back on the one stream and waited for together, so the time
// per call excludes the host's per-call wait, as nccl-tests' does. Leaves out correctness (tests/cuda/test_nccl_communicator.cpp) and
// multi-node placement. Run one rank per GPU:
//
//   mpirun -n GPUS bench_nccl_collectives [--min-bytes 1KiB] [--max-bytes 1GiB] [--iters N]
//                                          [--warmup N] [--quick] [--summary FILE]
//                                          [--min-busbw GBPS]
// Without a GPU for every rank it prints SKIP and exits 0. --min-busbw: exits 1 when the best
// all_reduce busbw is below it (a declared floor). --quick: 1 KiB..64 MiB, fewer iterations.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "measure/timing.hpp"
#include "parallel/bandwidth.hpp"
#include "parallel/communicator.hpp"
#include "parallel/nccl_communicator.hpp"

namespace {

using std::int64_t;
using sb::parallel::Collective;
using sb::parallel::Communicator;
using sb::parallel::DataType;
using sb::parallel::ReduceOp;
using sb::parallel::Request;

struct Options {
  int64_t min_bytes = int64_t{1} << 10;
  int64_t max_bytes = int64_t{1} << 30;
  int iters = 20, warmup = 5;
  double min_busbw_gbps = 0;
  std::string summary;
};

// "1KiB", "64MiB", "1GiB" or a plain byte count.
int64_t parse_bytes(const std::string& text) {
  std::size_t end = 0;
  const int64_t number = std::stoll(text, &end);
  const std::string unit = text.substr(end);
  if (unit.empty() || unit == "B") return number;
  if (unit == "KiB" || unit == "K") return number << 10;
  if (unit == "MiB" || unit == "M") return number << 20;
  if (unit == "GiB" || unit == "G") return number << 30;
  throw sb::UserError(fmt::format("bench_nccl_collectives: unknown size unit in '{}'", text));
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw sb::UserError(fmt::format("bench_nccl_collectives: {} needs a value", arg));
      return argv[++i];
    };
    if (arg == "--min-bytes") o.min_bytes = parse_bytes(value());
    else if (arg == "--max-bytes") o.max_bytes = parse_bytes(value());
    else if (arg == "--iters") o.iters = std::stoi(value());
    else if (arg == "--warmup") o.warmup = std::stoi(value());
    else if (arg == "--min-busbw") o.min_busbw_gbps = std::stod(value());
    else if (arg == "--summary") o.summary = value();
    else if (arg == "--quick") { o.max_bytes = int64_t{64} << 20; o.iters = 10; o.warmup = 2; }
    else throw sb::UserError(fmt::format("bench_nccl_collectives: unknown argument '{}'", arg));
  }
  if (o.min_bytes < 4 || o.max_bytes < o.min_bytes || o.iters < 1 || o.warmup < 0)
    throw sb::UserError("bench_nccl_collectives: need 4 <= --min-bytes <= --max-bytes, --iters >= 1, --warmup >= 0");
  return o;
}

// Device memory for the largest size, freed at exit.
struct DeviceBytes {
  void* data = nullptr;
  explicit DeviceBytes(int64_t bytes) {
    SB_CUDA_CHECK(cudaMalloc(&data, static_cast<std::size_t>(bytes)));
    SB_CUDA_CHECK(cudaMemset(data, 0, static_cast<std::size_t>(bytes)));  // zeros: no Inf/NaN
  }
  ~DeviceBytes() { cudaFree(data); }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  float* floats() const { return static_cast<float*>(data); }
};

struct Row {
  Collective collective;
  int64_t bytes = 0, count = 0;  // count: the per-call count the communicator takes
  double seconds = 0;            // per call, the slowest rank's
  sb::parallel::Bandwidth bandwidth;
};

// Fewer calls for big buffers: about 2 GiB moved per measurement, at least 5 calls.
int iterations_for(int64_t bytes, int iters) {
  const int64_t budget = (int64_t{2} << 30) / std::max<int64_t>(bytes, 1);
  return static_cast<int>(std::clamp<int64_t>(budget, 5, iters));
}

Row measure(Communicator& comm, Collective collective, int64_t bytes, const Options& o,
            const DeviceBytes& a, const DeviceBytes& b) {
  const int n = comm.size();
  const int64_t total = bytes / 4;  // floats in the nccl-tests size
  Row row{collective, total * 4, collective == Collective::all_reduce ? total : total / n, 0, {}};
  const auto issue = [&]() -> Request {
    switch (collective) {
      case Collective::all_reduce:
        return comm.iall_reduce(a.floats(), row.count, DataType::f32, ReduceOp::sum);
      case Collective::reduce_scatter:
        return comm.ireduce_scatter(a.floats(), b.floats(), row.count, DataType::f32, ReduceOp::sum);
      case Collective::all_gather:
        return comm.iall_gather(b.floats(), a.floats(), row.count, DataType::f32);
      default:
        throw sb::Error("bench_nccl_collectives: unsupported collective");
    }
  };
  // Warm-ups, then the timed calls, issued back to back on the one stream and waited for together
  // before the clock stops; every rank starts after a barrier (its stream idle) and the slowest
  // rank's time counts (measure/round_clock.hpp).
  std::vector<Request> in_flight;
  const std::function<void()> call = [&] { in_flight.push_back(issue()); };
  sb::measure::CommunicatorClock clock(comm, [&] {
    sb::parallel::wait_all(in_flight);
    in_flight.clear();
  });
  const int iters = iterations_for(row.bytes, o.iters);
  in_flight.reserve(static_cast<std::size_t>(std::max(iters, o.warmup)));
  row.seconds = sb::measure::time_rounds(call, {.warmups = o.warmup, .rounds = 1, .iterations = iters}, clock)[0];
  row.bandwidth = sb::parallel::collective_bandwidth(collective, row.bytes, n, row.seconds);
  return row;
}

std::string human_bytes(int64_t bytes) {
  if (bytes >= (int64_t{1} << 30)) return fmt::format("{}GiB", bytes >> 30);
  if (bytes >= (int64_t{1} << 20)) return fmt::format("{}MiB", bytes >> 20);
  if (bytes >= (int64_t{1} << 10)) return fmt::format("{}KiB", bytes >> 10);
  return fmt::format("{}B", bytes);
}

int run(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  std::unique_ptr<Communicator> world = sb::parallel::make_mpi_world_communicator();
  const int rank = world->rank(), ranks = world->size();
  const auto say = [&](const std::string& text) {
    if (rank == 0) std::printf("%s\n", text.c_str());
  };
  const int gpus = sb::kernels::cuda::visible_device_count();
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
  int node_ranks = 1;
  MPI_Comm_size(node, &node_ranks);
  MPI_Comm_free(&node);
  if (world->all_reduce_value(gpus >= node_ranks && gpus > 0 ? 1 : 0, ReduceOp::min) == 0) {
    const std::string skip =
        fmt::format("SKIP: bench_nccl_collectives needs a GPU per rank: {} rank{} on a node, {} GPU{} visible",
                    node_ranks, node_ranks == 1 ? "" : "s", gpus, gpus == 1 ? "" : "s");
    say(skip);
    if (rank == 0 && !o.summary.empty()) std::ofstream(o.summary) << "  " << skip << "\n";
    return 0;
  }
  const int device = sb::parallel::select_local_device();
  std::unique_ptr<Communicator> comm = sb::parallel::make_nccl_communicator(std::move(world));
  comm->stats().set_enabled(false);  // the benchmark times its own calls
  say(fmt::format("# NCCL {} ({} rank{}), rank 0 on {}", sb::parallel::nccl_version(), ranks,
                  ranks == 1 ? "" : "s", sb::kernels::cuda::describe_device(device)));
  say("# float, sum; time per call is the slowest rank's; busbw = algbw x bus factor (bandwidth.hpp)");

  // The largest size rounded down to a multiple of 4·ranks bytes, so every block is whole.
  const int64_t granule = 4 * static_cast<int64_t>(ranks);
  const DeviceBytes a(std::max(o.max_bytes / granule * granule, granule));
  const DeviceBytes b(std::max(o.max_bytes / granule * granule, granule));
  std::vector<Row> rows;
  say(fmt::format("{:>15} {:>12} | {:>14} {:>10} {:>10} | {:>14} {:>10} {:>10} | {:>14} {:>10} {:>10}",
                  "size (B)", "count", "all_reduce us", "algbw", "busbw", "all_gather us", "algbw", "busbw",
                  "red_scat us", "algbw", "busbw"));
  for (int64_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
    const int64_t size = bytes / granule * granule;
    if (size == 0) continue;
    std::string line = fmt::format("{:>15} {:>12}", size, size / 4);
    for (const Collective collective : {Collective::all_reduce, Collective::all_gather, Collective::reduce_scatter}) {
      const Row row = measure(*comm, collective, size, o, a, b);
      rows.push_back(row);
      line += fmt::format(" | {:>14.2f} {:>10.2f} {:>10.2f}", row.seconds * 1e6, row.bandwidth.algbw_gbps,
                          row.bandwidth.busbw_gbps);
    }
    say(line);
  }

  // The summary: each collective's best busbw and where, plus the largest size's.
  std::map<Collective, const Row*> best, largest;
  for (const Row& row : rows) {
    if (!best[row.collective] || row.bandwidth.busbw_gbps > best[row.collective]->bandwidth.busbw_gbps)
      best[row.collective] = &row;
    largest[row.collective] = &row;
  }
  std::string summary = fmt::format("bench_nccl_collectives: NCCL {}, {} rank{} ({})\n",
                                    sb::parallel::nccl_version(), ranks, ranks == 1 ? "" : "s",
                                    sb::kernels::cuda::describe_device(device));
  for (const auto& [collective, row] : best) {
    const Row& last = *largest[collective];
    summary += fmt::format("  {:<15} best busbw {:8.2f} GB/s (algbw {:8.2f}) at {:>7}; at {:>7}: busbw {:8.2f} GB/s, "
                           "algbw {:8.2f} GB/s, {:10.1f} us\n",
                           sb::parallel::to_string(collective), row->bandwidth.busbw_gbps, row->bandwidth.algbw_gbps,
                           human_bytes(row->bytes), human_bytes(last.bytes), last.bandwidth.busbw_gbps,
                           last.bandwidth.algbw_gbps, last.seconds * 1e6);
  }
  int status = 0;
  if (o.min_busbw_gbps > 0 && best.count(Collective::all_reduce) &&
      best[Collective::all_reduce]->bandwidth.busbw_gbps < o.min_busbw_gbps) {
    summary += fmt::format("  BELOW FLOOR: all_reduce best busbw {:.2f} GB/s < --min-busbw {:.2f}\n",
                           best[Collective::all_reduce]->bandwidth.busbw_gbps, o.min_busbw_gbps);
    status = 1;
  }
  if (ranks == 1) summary += "  (one rank: NCCL copies locally; busbw factors are 0 for one rank)\n";
  say(summary);
  if (rank == 0 && !o.summary.empty()) std::ofstream(o.summary) << summary;
  comm.reset();
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int status = 0;
  try {
    status = run(argc, argv);
  } catch (const sb::UserError& error) {
    std::fprintf(stderr, "%s\n", error.what());
    status = 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_nccl_collectives failed: %s\n", error.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
