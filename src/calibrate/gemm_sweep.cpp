// SPDX-License-Identifier: Apache-2.0
// The GEMM sweep on the measurement harness: one warm-up call, a probe call sets the iterations
// per round (about 50 ms), all ranks start each round together (measure::MpiClock), and the
// slowest rank's mean time per call in the fastest round counts.
#include "calibrate/gemm_sweep.hpp"

#include <string>

#include "core/memory.hpp"
#include "kernels/storage_kernels.hpp"
#include "measure/timing.hpp"
#include "parallel/mpi_check.hpp"

namespace sb::calibrate {

namespace {

constexpr int kRounds = 3;
constexpr double kTargetSecondsPerRound = 0.05;
constexpr int kMaxIterations = 1000;

template <class S>
S stored(float x);
template <> float stored<float>(float x) { return x; }
template <> bf16 stored<bf16>(float x) { return to_bf16(x); }
template <> fp16 stored<fp16>(float x) { return to_fp16(x); }

template <class S>
io::GemmRow time_gemm(MPI_Comm comm, int threads, std::int64_t size) {
  MemoryTracker tracker;
  kernels::StorageKernels<S> k(kernels::Backend::cpu, tracker);
  const std::int64_t m = size, n = size, depth = size;
  std::vector<S> a(static_cast<std::size_t>(m * depth));      // inp (m, k)
  std::vector<S> b(static_cast<std::size_t>(n * depth));      // weight (n, k)
  std::vector<S> c(static_cast<std::size_t>(m * n));          // out (m, n)
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = stored<S>(static_cast<float>(static_cast<int>(i % 17) - 8) / 64);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = stored<S>(static_cast<float>(static_cast<int>(i % 13) - 6) / 64);
  const std::function<void()> call = [&] { k.matmul_forward(c.data(), a.data(), b.data(), nullptr, m, depth, n); };
  measure::MpiClock clock(comm);
  // warm-up: page-touches c and the widening scratch; then one call probes
  const double probe = measure::time_rounds(call, {.warmups = 1, .rounds = 1, .iterations = 1}, clock)[0];
  const int iterations = measure::count_to_fill(kTargetSecondsPerRound, probe, 1, kMaxIterations);
  const std::vector<double> rounds =
      measure::time_rounds(call, {.warmups = 0, .rounds = kRounds, .iterations = iterations}, clock);
  const double best = measure::statistics_of(rounds).min;
  int ranks = 1;
  SB_MPI_CHECK(MPI_Comm_size(comm, &ranks));
  return io::GemmRow{kernels::storage_name<S>(), "cpu", m, n, depth, ranks, threads, iterations, best,
                     kernels::matmul_forward_work(m, depth, n, static_cast<int>(sizeof(S))).flops / best / 1e12};
}

}  // namespace

std::vector<io::GemmRow> run_gemm_sweep(MPI_Comm comm, int threads, const std::vector<std::int64_t>& sizes) {
  std::vector<io::GemmRow> rows;
  for (const std::int64_t size : sizes) {
    rows.push_back(time_gemm<float>(comm, threads, size));
    rows.push_back(time_gemm<bf16>(comm, threads, size));
    rows.push_back(time_gemm<fp16>(comm, threads, size));
  }
  return rows;
}

}  // namespace sb::calibrate
