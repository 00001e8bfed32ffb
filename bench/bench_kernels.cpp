// SPDX-License-Identifier: Apache-2.0
// Kernel speed: cpu::matmul_forward GFLOP/s beside cblas_sgemm and the cpu's bf16 linear layer
// (StorageKernels<bf16>: oneDNN on AMX/AVX512-BF16, widening below), cpu vs reference time of the
// other kernels at gpt-tiny shapes, conv2d and BatchNorm2d at resnet-mini shapes. Leaves out
// correctness (tests/) and whole training steps.
//
//   SB_THREADS=2 OMP_PROC_BIND=spread OMP_PLACES=threads build/bench/bench_kernels
//   ours/cblas ratio: divide the GFLOP/s of matmul_forward/cpu/... by matmul_forward/cblas/...
//   bf16 against fp32: --benchmark_filter='matmul_forward/(bf16|cblas)/BT:2048/C:2048'
//   conv2d only, shorter: --benchmark_filter='conv2d|batchnorm2d' --benchmark_min_time=0.2
#include <benchmark/benchmark.h>
#include <cblas.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_threads.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/conv2d_im2col.hpp"
#include "kernels/cpu/storage_values.hpp"
#include "kernels/kernels.hpp"
#include "kernels/storage_kernels.hpp"
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

// n normal values (as random_floats) in storage type S, each rounded once.
template <class S>
std::vector<S> stored_values(i64 n, std::uint64_t stream, double scale = 1.0) {
  const auto values = random_floats(n, stream, scale);
  std::vector<S> out(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = sb::kernels::cpu::stored<S>(values[i]);
  return out;
}

// ---- GEMM: out (BT,OC) = inp (BT,C) . weight (OC,C)^T ------------------------------------------
double matmul_flops(i64 BT, i64 C, i64 OC) { return sb::kernels::matmul_forward_work(BT, C, OC, 4).flops; }

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

// bf16 operands and output, with bias, as the bf16 GPT's layers call it.
void matmul_forward_bf16(benchmark::State& state) {
  const i64 BT = state.range(0), C = state.range(1), OC = state.range(2);
  const auto inp = stored_values<sb::bf16>(BT * C, 0), weight = stored_values<sb::bf16>(OC * C, 1),
             bias = stored_values<sb::bf16>(OC, 2);
  std::vector<sb::bf16> out(static_cast<std::size_t>(BT * OC));
  sb::MemoryTracker tracker;
  sb::kernels::StorageKernels<sb::bf16> k(Backend::cpu, tracker);
  state.SetLabel(k.widens_gemms() ? "widened to fp32" : "oneDNN bf16");
  for (auto _ : state) {
    k.matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), BT, C, OC);
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
  shapes.push_back({2048, 2048, 2048});
  for (auto [name, fn] : {std::pair{"matmul_forward/cpu", &matmul_forward_cpu},
                          std::pair{"matmul_forward/cblas", &matmul_forward_cblas},
                          std::pair{"matmul_forward/bf16", &matmul_forward_bf16}}) {
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

// ---- the GPT's elementwise kernels and attention by storage type, at gpt-nano's shapes ------------
// What a 16-bit step pays outside its GEMMs: the same call through StorageKernels<S> for float,
// bf16 and fp16 (the cpu's 16-bit kernels read their operands as they lie), forward + backward.
constexpr i64 kNanoBT = 16 * 64, kNanoT = 64, kNanoC = 64, kNanoNH = 4;

template <class S>
void storage_gelu(benchmark::State& state) {
  const i64 N = kNanoBT * 4 * kNanoC;
  const auto inp = stored_values<S>(N, 0), dout = stored_values<S>(N, 1, 1e-3);
  std::vector<S> out(N), dinp(N);
  sb::MemoryTracker tracker;
  sb::kernels::StorageKernels<S> k(Backend::cpu, tracker);
  for (auto _ : state) {
    k.gelu_forward(out.data(), inp.data(), N);
    k.gelu_backward(dinp.data(), inp.data(), dout.data(), N);
    benchmark::ClobberMemory();
  }
}

template <class S>
void storage_layernorm(benchmark::State& state) {
  const i64 N = kNanoBT, C = kNanoC;
  const auto inp = stored_values<S>(N * C, 0), weight = stored_values<S>(C, 1), bias = stored_values<S>(C, 2),
             dout = stored_values<S>(N * C, 3, 1e-3);
  std::vector<S> out(N * C), dinp(N * C);
  std::vector<float> mean(N), rstd(N), dweight(C), dbias(C);
  sb::MemoryTracker tracker;
  sb::kernels::StorageKernels<S> k(Backend::cpu, tracker);
  for (auto _ : state) {
    k.layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C);
    k.layernorm_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(),
                         mean.data(), rstd.data(), N, C);
    benchmark::ClobberMemory();
  }
}

template <class S>
void storage_attention(benchmark::State& state) {
  const i64 B = kNanoBT / kNanoT, T = kNanoT, C = kNanoC, NH = kNanoNH;
  const auto qkv = stored_values<S>(B * T * 3 * C, 0), dout = stored_values<S>(B * T * C, 1, 1e-3);
  std::vector<S> out(B * T * C), att(B * NH * T * T), dqkv(B * T * 3 * C);
  sb::MemoryTracker tracker;
  sb::kernels::StorageKernels<S> k(Backend::cpu, tracker);
  for (auto _ : state) {
    k.attention_forward(out.data(), att.data(), qkv.data(), B, T, C, NH);
    k.attention_backward(dqkv.data(), dout.data(), qkv.data(), att.data(), B, T, C, NH);
    benchmark::ClobberMemory();
  }
}

template <class S>
void storage_residual(benchmark::State& state) {
  const i64 N = kNanoBT * kNanoC;
  const auto a = stored_values<S>(N, 0), b = stored_values<S>(N, 1), dout = stored_values<S>(N, 2, 1e-3);
  std::vector<S> out(N), da(N), db(N);
  sb::MemoryTracker tracker;
  sb::kernels::StorageKernels<S> k(Backend::cpu, tracker);
  for (auto _ : state) {
    k.residual_forward(out.data(), a.data(), b.data(), N);
    k.residual_backward(da.data(), db.data(), dout.data(), N);
    benchmark::ClobberMemory();
  }
}

// The linear layer's forward and backward (dinp, dweight, dbias) at (BT, C, OC).
template <class S>
void storage_matmul(benchmark::State& state) {
  const i64 BT = state.range(0), C = state.range(1), OC = state.range(2);
  const auto inp = stored_values<S>(BT * C, 0), weight = stored_values<S>(OC * C, 1, 0.1),
             bias = stored_values<S>(OC, 2), dout = stored_values<S>(BT * OC, 3, 1e-3);
  std::vector<S> out(BT * OC), dinp(BT * C);
  std::vector<float> dweight(OC * C), dbias(OC);
  sb::MemoryTracker tracker;
  sb::kernels::StorageKernels<S> k(Backend::cpu, tracker);
  for (auto _ : state) {
    k.matmul_forward(out.data(), inp.data(), weight.data(), bias.data(), BT, C, OC);
    k.matmul_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(), BT, C, OC);
    benchmark::ClobberMemory();
  }
  set_gflops(state, 3 * matmul_flops(BT, C, OC));
}

template <class S>
void register_storage_benchmarks(const char* type) {
  const std::pair<const char*, void (*)(benchmark::State&)> bodies[] = {{"storage_gelu_fwd_bwd", &storage_gelu<S>},
                                                                       {"storage_layernorm_fwd_bwd", &storage_layernorm<S>},
                                                                       {"storage_attention_fwd_bwd", &storage_attention<S>},
                                                                       {"storage_residual_fwd_bwd", &storage_residual<S>}};
  for (const auto& [name, body] : bodies)
    benchmark::RegisterBenchmark((std::string(name) + "/" + type).c_str(), body)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  // gpt-nano's linear layers (micro-batch 16 x 64 tokens, C 64: qkv, attention projection, fc,
  // fc projection, head) and gpt-tiny's fc (16 x 128 tokens, C 256)
  auto* matmul = benchmark::RegisterBenchmark((std::string("storage_matmul_fwd_bwd/") + type).c_str(), &storage_matmul<S>);
  matmul->ArgNames({"BT", "C", "OC"})->UseRealTime()->Unit(benchmark::kMicrosecond);
  for (const std::vector<i64>& shape : std::vector<std::vector<i64>>{
           {1024, 64, 192}, {1024, 64, 64}, {1024, 64, 256}, {1024, 256, 64}, {2048, 256, 1024}})
    matmul->Args(shape);
}

// ---- convolutional-network kernels at resnet-mini shapes --------------------------------------
// FLOPs as kernels.hpp counts them (conv2d_forward_work, conv2d_backward_work): a multiply and
// an add per tap, bias and padding taps not counted; the backward with dinp twice the forward.
// Arguments N, C, H (= W), OC, K (= KH = KW), stride; padding K / 2 (3x3 pad 1, 1x1 pad 0).
struct Conv2dBenchShape {
  i64 N, C, H, OC, K, stride, pad, OH;
  explicit Conv2dBenchShape(const benchmark::State& state)
      : N(state.range(0)), C(state.range(1)), H(state.range(2)), OC(state.range(3)),
        K(state.range(4)), stride(state.range(5)), pad(K / 2),
        OH((H + 2 * pad - K) / stride + 1) {}
  double forward_flops() const { return sb::kernels::conv2d_forward_work(N, C, H, H, OC, K, K, stride, pad, 4).flops; }
  double backward_flops() const {
    return sb::kernels::conv2d_backward_work(N, C, H, H, OC, K, K, stride, pad, true, 4).flops;
  }
};

void conv2d_forward(benchmark::State& state, const KernelTable& k) {
  const Conv2dBenchShape s(state);
  const auto inp = random_floats(s.N * s.C * s.H * s.H, 0),
             weight = random_floats(s.OC * s.C * s.K * s.K, 1, 0.1), bias = random_floats(s.OC, 2);
  std::vector<float> out(static_cast<std::size_t>(s.N * s.OC * s.OH * s.OH));
  for (auto _ : state) {
    k.conv2d_forward(out.data(), inp.data(), weight.data(), bias.data(), s.N, s.C, s.H, s.H, s.OC,
                     s.K, s.K, s.stride, s.pad);
    benchmark::ClobberMemory();
  }
  set_gflops(state, s.forward_flops());
}

// Forward, then the backward with every gradient (dinp included, even for the C = 1 stem).
void conv2d_forward_backward(benchmark::State& state, const KernelTable& k) {
  const Conv2dBenchShape s(state);
  const i64 inp_size = s.N * s.C * s.H * s.H, weight_size = s.OC * s.C * s.K * s.K;
  const i64 out_size = s.N * s.OC * s.OH * s.OH;
  const auto inp = random_floats(inp_size, 0), weight = random_floats(weight_size, 1, 0.1),
             bias = random_floats(s.OC, 2), dout = random_floats(out_size, 3);
  std::vector<float> out(out_size), dinp(inp_size), dweight(weight_size), dbias(s.OC);
  for (auto _ : state) {
    k.conv2d_forward(out.data(), inp.data(), weight.data(), bias.data(), s.N, s.C, s.H, s.H, s.OC,
                     s.K, s.K, s.stride, s.pad);
    k.conv2d_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                      weight.data(), s.N, s.C, s.H, s.H, s.OC, s.K, s.K, s.stride, s.pad);
    benchmark::ClobberMemory();
  }
  set_gflops(state, s.forward_flops() + s.backward_flops());
}

// BatchNorm2d training forward + backward, arguments N, C, HW. GB/s counts the compulsory
// traffic only (kernels.hpp's batchnorm2d_forward_train_work and batchnorm2d_backward_work: 6
// passes over N·C·HW floats); the kernels make a few more passes (statistics, sums).
void batchnorm2d_forward_backward(benchmark::State& state, const KernelTable& k) {
  const i64 N = state.range(0), C = state.range(1), HW = state.range(2), size = N * C * HW;
  const auto inp = random_floats(size, 0), weight = random_floats(C, 1), bias = random_floats(C, 2),
             dout = random_floats(size, 3);
  std::vector<float> out(size), dinp(size), mean(C), rstd(C), running_mean(C, 0.0f),
      running_var(C, 1.0f), dweight(C), dbias(C);
  for (auto _ : state) {
    k.batchnorm2d_forward_train(out.data(), mean.data(), rstd.data(), running_mean.data(),
                                running_var.data(), inp.data(), weight.data(), bias.data(), N, C,
                                HW, 0.1, 1e-5);
    k.batchnorm2d_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                           weight.data(), mean.data(), rstd.data(), N, C, HW);
    benchmark::ClobberMemory();
  }
  const double gigabytes = (sb::kernels::batchnorm2d_forward_train_work(N, C, HW, 4).bytes +
                            sb::kernels::batchnorm2d_backward_work(N, C, HW, 4).bytes) * 1e-9;
  state.counters["GB/s"] =
      benchmark::Counter(gigabytes, benchmark::Counter::kIsIterationInvariantRate);
}

// resnet-mini (28x28 inputs, stages of 16, 32, 64 channels): the stem, each stage's 3x3
// convolutions (the first of a stage with stride 2) and the 1x1 stride-2 shortcuts.
void register_cnn_benchmarks() {
  const std::vector<std::vector<i64>> layers = {
      {1, 28, 16, 3, 1},  {16, 28, 16, 3, 1}, {16, 28, 32, 3, 2}, {16, 28, 32, 1, 2},
      {32, 14, 32, 3, 1}, {32, 14, 64, 3, 2}, {32, 14, 64, 1, 2}, {64, 7, 64, 3, 1}};
  using Body = void (*)(benchmark::State&, const KernelTable&);
  const std::pair<const char*, Body> bodies[] = {{"conv2d_forward", &conv2d_forward},
                                                 {"conv2d_fwd_bwd", &conv2d_forward_backward}};
  // cpu_im2col: the cpu table with its im2col + BLAS convolution paths only, beside the
  // shifted-plane ones the cpu backend takes on AVX2 CPUs.
  static KernelTable im2col = kernels_for(Backend::cpu);
  im2col.conv2d_forward = &sb::kernels::cpu::conv2d_forward_im2col;
  im2col.conv2d_backward = &sb::kernels::cpu::conv2d_backward_im2col;
  const std::pair<std::string, const KernelTable*> tables[] = {
      {"cpu", &kernels_for(Backend::cpu)},
      {"cpu_im2col", &im2col},
      {"reference", &kernels_for(Backend::reference)}};
  for (const auto& [name, body] : bodies) {
    for (const auto& [table_name, table] : tables) {
      const std::string full = std::string(name) + "/" + table_name;
      auto* b = benchmark::RegisterBenchmark(full.c_str(), body, std::cref(*table));
      b->ArgNames({"N", "C", "H", "OC", "K", "stride"})
          ->UseRealTime()
          ->Unit(benchmark::kMillisecond);
      for (i64 N : {64, 128})
        for (const auto& layer : layers) {
          std::vector<i64> args{N};
          args.insert(args.end(), layer.begin(), layer.end());
          b->Args(args);
        }
    }
  }
  for (Backend backend : {Backend::cpu, Backend::reference}) {
    const std::string full = "batchnorm2d_fwd_bwd/" + std::string(to_string(backend));
    auto* b = benchmark::RegisterBenchmark(full.c_str(), &batchnorm2d_forward_backward,
                                           std::cref(kernels_for(backend)));
    b->ArgNames({"N", "C", "HW"})->UseRealTime()->Unit(benchmark::kMillisecond);
    for (i64 N : {64, 128}) b->Args({N, 16, 28 * 28})->Args({N, 32, 14 * 14})->Args({N, 64, 7 * 7});
  }
}


}  // namespace

int main(int argc, char** argv) {
  const int threads = sb::bench::threads_from_environment("bench_kernels");
  sb::ParallelRuntime runtime(threads);
  benchmark::AddCustomContext("sb_threads", std::to_string(runtime.threads()));
  benchmark::AddCustomContext("sb_build_type", SB_BUILD_TYPE);
  benchmark::AddCustomContext("sb_git_sha", SB_GIT_SHA);
  benchmark::AddCustomContext("kokkos", sb::ParallelRuntime::kokkos_version());
  benchmark::AddCustomContext("blas", sb::ParallelRuntime::blas_description());
  benchmark::AddCustomContext("blas_threads", std::to_string(sb::ParallelRuntime::blas_threads()));
  register_gemm_benchmarks();
  register_kernel_benchmarks();
  register_storage_benchmarks<float>("fp32");
  register_storage_benchmarks<sb::bf16>("bf16");
  register_storage_benchmarks<sb::fp16>("fp16");
  register_cnn_benchmarks();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
