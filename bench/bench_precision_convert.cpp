// SPDX-License-Identifier: Apache-2.0
// float <-> bf16/fp16 conversion throughput of the cpu (and reference) kernels in GB/s, beside
// a float copy of the same element count (one memcpy, and the same chunked Kokkos loop as the
// kernels), so that conversion cost reads as a ratio to copying. GB/s counts bytes read plus
// bytes written: 6 per element for a conversion, 8 for a float copy. Leaves out correctness
// (tests/precision, tests/kernels) and the GPU kernels.
//
//   SB_THREADS=2 OMP_PROC_BIND=spread OMP_PLACES=threads build/bench/bench_precision_convert
//   ratio: divide the GB/s of convert_*/cpu/N by copy_f32/kokkos/N (or memcpy/N)
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "bench_threads.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/host_parallel.hpp"
#include "kernels/kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"
#include "runtime/parallel_runtime.hpp"

namespace {

using sb::kernels::Backend;
using sb::kernels::i64;
using sb::kernels::kernels_for;
using sb::kernels::KernelTable;

// N(0, 1) floats: finite values in the normal range of both formats, like activations.
std::vector<float> random_floats(i64 n) {
  const sb::CounterRng rng(2024, 0);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(rng.normal(i));
  return v;
}

void set_bandwidth(benchmark::State& state, double bytes) {
  state.counters["GB/s"] = benchmark::Counter(bytes * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

template <class Half>
void to_half(benchmark::State& state, const KernelTable& k) {
  const i64 n = state.range(0);
  const auto inp = random_floats(n);
  std::vector<Half> out(static_cast<std::size_t>(n));
  for (auto _ : state) {
    if constexpr (std::is_same_v<Half, sb::bf16>) k.convert_f32_to_bf16(out.data(), inp.data(), n);
    else k.convert_f32_to_fp16(out.data(), inp.data(), n);
    benchmark::ClobberMemory();
  }
  set_bandwidth(state, 6.0 * static_cast<double>(n));
}

template <class Half>
void from_half(benchmark::State& state, const KernelTable& k) {
  const i64 n = state.range(0);
  const auto floats = random_floats(n);
  std::vector<Half> inp(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<Half, sb::bf16>) inp[static_cast<std::size_t>(i)] = sb::to_bf16(floats[i]);
    else inp[static_cast<std::size_t>(i)] = sb::to_fp16(floats[i]);
  }
  std::vector<float> out(static_cast<std::size_t>(n));
  for (auto _ : state) {
    if constexpr (std::is_same_v<Half, sb::bf16>) k.convert_bf16_to_f32(out.data(), inp.data(), n);
    else k.convert_fp16_to_f32(out.data(), inp.data(), n);
    benchmark::ClobberMemory();
  }
  set_bandwidth(state, 6.0 * static_cast<double>(n));
}

// One memcpy of n floats on the calling thread.
void memcpy_f32(benchmark::State& state) {
  const i64 n = state.range(0);
  const auto inp = random_floats(n);
  std::vector<float> out(static_cast<std::size_t>(n));
  for (auto _ : state) {
    std::memcpy(out.data(), inp.data(), static_cast<std::size_t>(n) * sizeof(float));
    benchmark::ClobberMemory();
  }
  set_bandwidth(state, 8.0 * static_cast<double>(n));
}

// n floats copied with the kernels' own chunked Kokkos loop (a memcpy per chunk).
void copy_f32_kokkos(benchmark::State& state) {
  const i64 n = state.range(0);
  const auto inp = random_floats(n);
  std::vector<float> out(static_cast<std::size_t>(n));
  float* dst = out.data();
  const float* src = inp.data();
  for (auto _ : state) {
    sb::kernels::cpu::parallel_for_chunks(
        "bench::copy_f32", n, sb::kernels::cpu::kElementwiseChunk, [=](i64 begin, i64 end) {
          std::memcpy(dst + begin, src + begin, static_cast<std::size_t>(end - begin) * sizeof(float));
        });
    benchmark::ClobberMemory();
  }
  set_bandwidth(state, 8.0 * static_cast<double>(n));
}

// 2^20 elements (4 MiB of floats: in the last-level cache) and 2^24 (64 MiB: from memory).
void register_benchmarks() {
  const std::vector<i64> sizes = {1 << 20, 1 << 24};
  using Body = void (*)(benchmark::State&, const KernelTable&);
  const std::pair<const char*, Body> bodies[] = {
      {"convert_f32_to_bf16", &to_half<sb::bf16>}, {"convert_bf16_to_f32", &from_half<sb::bf16>},
      {"convert_f32_to_fp16", &to_half<sb::fp16>}, {"convert_fp16_to_f32", &from_half<sb::fp16>}};
  for (const auto& [name, body] : bodies) {
    for (Backend backend : {Backend::cpu, Backend::reference}) {
      const std::string full = std::string(name) + "/" + std::string(to_string(backend));
      auto* b = benchmark::RegisterBenchmark(full.c_str(), body, std::cref(kernels_for(backend)));
      b->ArgName("N")->UseRealTime()->Unit(benchmark::kMicrosecond);
      for (i64 n : sizes) b->Arg(n);
    }
  }
  for (auto [name, body] : {std::pair{"memcpy_f32", &memcpy_f32}, std::pair{"copy_f32/kokkos", &copy_f32_kokkos}}) {
    auto* b = benchmark::RegisterBenchmark(name, body);
    b->ArgName("N")->UseRealTime()->Unit(benchmark::kMicrosecond);
    for (i64 n : sizes) b->Arg(n);
  }
}


}  // namespace

int main(int argc, char** argv) {
  sb::ParallelRuntime runtime(sb::bench::threads_from_environment("bench_precision_convert"));
  benchmark::AddCustomContext("sb_threads", std::to_string(runtime.threads()));
  benchmark::AddCustomContext("sb_build_type", SB_BUILD_TYPE);
  benchmark::AddCustomContext("sb_git_sha", SB_GIT_SHA);
  register_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
