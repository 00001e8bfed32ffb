// SPDX-License-Identifier: Apache-2.0
// int8 × int8 → int32 GEMM (cpu::int8_matmul_forward, dequantised, with bias) beside the fp32
// GEMM the models use (cpu::matmul_forward, OpenBLAS sgemm) on the same shapes, in one row per
// shape: each iteration runs both, alternating, and the row reports both times and
// fp32_ms/int8_ms (> 1: int8 is faster). Shapes: resnet-mini's convolutions as im2col GEMMs
// (N·OH·OW, C·9) × (OC) at N = 64, its fc, and gpt-tiny's four linear layers at B·T = 8·128.
// Leaves out the im2col and quantisation of the input (compress/), and correctness (tests/).
//
//   SB_THREADS=1 build/bench/bench_int8_gemm --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_threads.hpp"
#include "core/rng.hpp"
#include "kernels/kernels.hpp"
#include "runtime/parallel_runtime.hpp"

namespace {

using sb::kernels::i64;
using Clock = std::chrono::steady_clock;

std::vector<std::int8_t> random_int8(i64 n, std::uint64_t stream) {
  const sb::CounterRng rng(2024, stream);
  std::vector<std::int8_t> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<std::int8_t>(static_cast<i64>(rng.below(i, 255)) - 127);
  return v;
}

std::vector<float> random_floats(i64 n, std::uint64_t stream) {
  const sb::CounterRng rng(2024, stream);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<float>(rng.normal(i));
  return v;
}

double seconds(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// out (BT,OC) = inp (BT,C) · weight (OC,C)^T + bias, in int8 and in fp32.
void int8_vs_fp32(benchmark::State& state) {
  const i64 BT = state.range(0), C = state.range(1), OC = state.range(2);
  const auto inp8 = random_int8(BT * C, 0), weight8 = random_int8(OC * C, 1);
  const auto inp = random_floats(BT * C, 2), weight = random_floats(OC * C, 3), bias = random_floats(OC, 4);
  const std::vector<float> weight_scale(OC, 1e-3f);
  std::vector<float> out(static_cast<std::size_t>(BT * OC));
  double int8_total = 0, fp32_total = 0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    sb::kernels::cpu::int8_matmul_forward(out.data(), inp8.data(), weight8.data(), 0.01f,
                                          weight_scale.data(), bias.data(), BT, C, OC);
    benchmark::ClobberMemory();
    const auto t1 = Clock::now();
    sb::kernels::cpu::matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), BT, C, OC);
    benchmark::ClobberMemory();
    const auto t2 = Clock::now();
    int8_total += seconds(t0, t1);
    fp32_total += seconds(t1, t2);
    state.SetIterationTime(seconds(t0, t1));
  }
  const double n = static_cast<double>(state.iterations()), ops = sb::kernels::matmul_forward_work(BT, C, OC, 4).flops;
  state.counters["int8_ms"] = 1e3 * int8_total / n;
  state.counters["fp32_ms"] = 1e3 * fp32_total / n;
  state.counters["int8_GOP/s"] = ops * n / int8_total * 1e-9;
  state.counters["fp32_GFLOP/s"] = ops * n / fp32_total * 1e-9;
  state.counters["fp32/int8"] = fp32_total / int8_total;
}

void register_benchmarks() {
  auto* b = benchmark::RegisterBenchmark("int8_vs_fp32_gemm", &int8_vs_fp32);
  b->ArgNames({"BT", "C", "OC"})->UseManualTime()->Unit(benchmark::kMillisecond);
  constexpr i64 N = 64, BT = 8 * 128, C = 256;
  b->Args({N * 28 * 28, 9, 16})         // resnet-mini stem conv
      ->Args({N * 28 * 28, 16 * 9, 16})  // stage1 3×3
      ->Args({N * 14 * 14, 32 * 9, 32})  // stage2 3×3
      ->Args({N * 7 * 7, 64 * 9, 64})    // stage3 3×3
      ->Args({N, 64, 10})                // fc
      ->Args({BT, C, 3 * C})             // gpt-tiny qkv
      ->Args({BT, C, C})                 // attention projection
      ->Args({BT, C, 4 * C})             // fc
      ->Args({BT, 4 * C, C});            // fc projection
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = sb::bench::threads_from_environment("bench_int8_gemm");
  sb::ParallelRuntime runtime(threads);
  benchmark::AddCustomContext("sb_threads", std::to_string(runtime.threads()));
  benchmark::AddCustomContext("sb_build_type", SB_BUILD_TYPE);
  benchmark::AddCustomContext("kokkos", sb::ParallelRuntime::kokkos_version());
  benchmark::AddCustomContext("blas", sb::ParallelRuntime::blas_description());
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
