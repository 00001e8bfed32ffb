// Kernel speed: cpu::matmul_forward GFLOP/s beside cblas_sgemm, cpu vs reference time of the
// other kernels at gpt-tiny shapes. Leaves out correctness (tests/) and whole training steps.
//
//   SB_THREADS=2 OMP_PROC_BIND=spread OMP_PLACES=threads build/bench/bench_kernels
//   ours/cblas ratio: divide the GFLOP/s of matmul_forward/cpu/... by matmul_forward/cblas/...
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "kernels/kernels.hpp"
#include "runtime/parallel_runtime.hpp"

namespace {

using sb::kernels::Backend;
using sb::kernels::i64;
using sb::kernels::kernels_for;
using sb::kernels::KernelTable;

std::vector<float> random_floats(i64 n, std::uint64_t stream, double scale = 1.0) {
  const sb::CounterRng rng(2024, stream);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<float>(scale * rng.normal(i));
  return v;
}

std::vector<std::int32_t> random_indices(i64 n, i64 bound, std::uint64_t stream) {
  const sb::CounterRng rng(2024, stream);
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<std::int32_t>(rng.below(i, bound));
  return v;
}

// ---- GEMM: out (BT,OC) = inp (BT,C) . weight (OC,C)^T ------------------------------------------
double matmul_flops(i64 BT, i64 C, i64 OC) { return 2.0 * BT * C * OC; }

void set_gflops(benchmark::State& state, double flops) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// With bias, as the GPT layers call it: bias rows copied into out, then sgemm with beta = 1.
void matmul_forward_cpu(benchmark::State& state) {
  const i64 BT = state.range(0), C = state.range(1), OC = state.range(2);
  const auto inp = random_floats(BT * C, 0), weight = random_floats(OC * C, 1),
             bias = random_floats(OC, 2);
  std::vector<float> out(static_cast<std::size_t>(BT * OC));
  for (auto _ : state) {
    sb::kernels::cpu::matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), BT, C, OC);
    benchmark::ClobberMemory();
  }
  set_gflops(state, matmul_flops(BT, C, OC));
}

// The bare library call on the same shapes, no bias: the ceiling for the row above.
void matmul_forward_cblas(benchmark::State& state) {
  const i64 BT = state.range(0), C = state.range(1), OC = state.range(2);
  const auto inp = random_floats(BT * C, 0), weight = random_floats(OC * C, 1);
  std::vector<float> out(static_cast<std::size_t>(BT * OC));
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(BT),
                static_cast<int>(OC), static_cast<int>(C), 1.0f, inp.data(), static_cast<int>(C),
                weight.data(), static_cast<int>(C), 0.0f, out.data(), static_cast<int>(OC));
    benchmark::ClobberMemory();
  }
  set_gflops(state, matmul_flops(BT, C, OC));
}

void register_gemm_benchmarks() {
  std::vector<std::vector<i64>> shapes;
  for (i64 BT : {2048, 4096})
    for (i64 C : {256, 384})
      for (i64 OC : {3 * C, 4 * C}) shapes.push_back({BT, C, OC});
  shapes.push_back({1024, 1024, 1024});
  for (auto [name, fn] : {std::pair{"matmul_forward/cpu", &matmul_forward_cpu},
                          std::pair{"matmul_forward/cblas", &matmul_forward_cblas}}) {
    auto* b = benchmark::RegisterBenchmark(name, fn);
    b->ArgNames({"BT", "C", "OC"})->UseRealTime()->Unit(benchmark::kMillisecond);
    for (const auto& shape : shapes) b->Args(shape);
  }
}

// ---- non-GEMM kernels at gpt-tiny shapes, forward + backward per iteration ---------------------
constexpr i64 kB = 16, kT = 128, kC = 256, kNH = 8, kV = 256;

void layernorm_forward_backward(benchmark::State& state, const KernelTable& k) {
  const i64 N = kB * kT, C = kC;
  const auto inp = random_floats(N * C, 0), weight = random_floats(C, 1),
             bias = random_floats(C, 2), dout = random_floats(N * C, 3);
  std::vector<float> out(N * C), mean(N), rstd(N), dinp(N * C), dweight(C), dbias(C);
  for (auto _ : state) {
    k.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(),
                        bias.data(), N, C);
    k.layernorm_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                         weight.data(), mean.data(), rstd.data(), N, C);
    benchmark::ClobberMemory();
  }
}

void attention_forward_backward(benchmark::State& state, const KernelTable& k) {
  const auto qkv = random_floats(kB * kT * 3 * kC, 0), dout = random_floats(kB * kT * kC, 1);
  std::vector<float> out(kB * kT * kC), att(kB * kNH * kT * kT), dqkv(kB * kT * 3 * kC);
  for (auto _ : state) {
    k.attention_forward(out.data(), att.data(), qkv.data(), kB, kT, kC, kNH);
    k.attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), kB, kT, kC, kNH);
    benchmark::ClobberMemory();
  }
}

void gelu_forward_backward(benchmark::State& state, const KernelTable& k) {
  const i64 N = kB * kT * 4 * kC;  // the MLP's hidden activations
  const auto inp = random_floats(N, 0), dout = random_floats(N, 1);
  std::vector<float> out(N), dinp(N);
  for (auto _ : state) {
    k.gelu_forward(out.data(), inp.data(), N);
    k.gelu_backward(dinp.data(), inp.data(), dout.data(), N);
    benchmark::ClobberMemory();
  }
}

void crossentropy_forward_backward(benchmark::State& state, const KernelTable& k) {
  const i64 BT = kB * kT;
  const auto logits = random_floats(BT * kV, 0, 4.0);
  const auto targets = random_indices(BT, kV, 1);
  const std::vector<float> dlosses(BT, 1.0f / static_cast<float>(BT));
  std::vector<float> losses(BT), probs(BT * kV), dlogits(BT * kV);
  for (auto _ : state) {
    k.crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), BT, kV);
    k.crossentropy_backward(dlogits.data(), probs.data(), targets.data(), dlosses.data(), BT, kV);
    benchmark::ClobberMemory();
  }
}

void register_kernel_benchmarks() {
  using Body = void (*)(benchmark::State&, const KernelTable&);
  const std::pair<const char*, Body> bodies[] = {
      {"layernorm_fwd_bwd", &layernorm_forward_backward},
      {"attention_fwd_bwd", &attention_forward_backward},
      {"gelu_fwd_bwd", &gelu_forward_backward},
      {"crossentropy_fwd_bwd", &crossentropy_forward_backward}};
  for (const auto& [name, body] : bodies) {
    for (Backend backend : {Backend::cpu, Backend::reference}) {
      const std::string full = std::string(name) + "/" + std::string(to_string(backend));
      benchmark::RegisterBenchmark(full.c_str(), body, std::cref(kernels_for(backend)))
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

int threads_from_environment() {
  const char* text = std::getenv("SB_THREADS");
  if (!text || !*text) return 1;
  char* end = nullptr;
  const long threads = std::strtol(text, &end, 10);
  if (*end != '\0' || threads < 1 || threads > 4096) {
    std::fprintf(stderr, "bench_kernels: SB_THREADS='%s' is not a thread count (1, 2, ...)\n", text);
    std::exit(2);
  }
  return static_cast<int>(threads);
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = threads_from_environment();
  sb::ParallelRuntime runtime(threads);
  benchmark::AddCustomContext("sb_threads", std::to_string(runtime.threads()));
  benchmark::AddCustomContext("sb_build_type", SB_BUILD_TYPE);
  benchmark::AddCustomContext("sb_git_sha", SB_GIT_SHA);
  benchmark::AddCustomContext("kokkos", sb::ParallelRuntime::kokkos_version());
  benchmark::AddCustomContext("blas", sb::ParallelRuntime::blas_description());
  benchmark::AddCustomContext("blas_threads", std::to_string(sb::ParallelRuntime::blas_threads()));
  register_gemm_benchmarks();
  register_kernel_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
