// SPDX-License-Identifier: Apache-2.0
// GEMM throughput per precision (fp32, tf32, fp16, bf16) on the GPU: our gemm() (the candidate
// its autotuning chose) against the fastest of the heuristic's 16 candidates, each timed
// with CUDA events; TFLOP/s of both and the ratio ours/best. Leaves out fp8, batched GEMMs and
// the calibration file (scalebench calibrate will read these numbers later).
//
//   bench_cuda_gemm [--quick] [--summary FILE] [google benchmark flags]
// Without a visible GPU it prints SKIP and exits 0.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "kernels/cuda/convert.hpp"
#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/gemm.hpp"

namespace sb::kernels::cuda {
namespace {

constexpr int kCandidates = 16;        // heuristic candidates requested and timed
constexpr double kTimedSeconds = 0.025; // per timing round: enough launches to hide jitter
constexpr int kRounds = 3;              // rounds per algorithm; the fastest round counts

struct GemmResult {
  GemmShape shape;
  double ours_seconds = 0, best_seconds = 0;
  int best_algorithm = 0, candidates = 0;
  std::string ours_algorithm;  // describe() of gemm()'s choice
};

double tflops(const GemmShape& shape, double seconds) { return gemm_flops(shape) / seconds * 1e-12; }

// Seconds per GEMM of one algorithm: warm-up, then kRounds rounds of `launches` back-to-back
// launches between two events; the fastest round.
double seconds_per_gemm(CudaContext& ctx, const GemmPlan& plan, int algorithm, const void* a,
                        const void* b, void* d, int launches) {
  cudaEvent_t start, stop;
  SB_CUDA_CHECK(cudaEventCreate(&start));
  SB_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 2; ++i) plan.run(algorithm, a, b, d, 1.0f, 0.0f);
  double best = 1e30;
  for (int round = 0; round < kRounds; ++round) {
    SB_CUDA_CHECK(cudaEventRecord(start, ctx.stream()));
    for (int i = 0; i < launches; ++i) plan.run(algorithm, a, b, d, 1.0f, 0.0f);
    SB_CUDA_CHECK(cudaEventRecord(stop, ctx.stream()));
    SB_CUDA_CHECK(cudaEventSynchronize(stop));
    float ms = 0;
    SB_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    best = std::min(best, static_cast<double>(ms) * 1e-3 / launches);
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return best;
}

// Ours is gemm()'s choice (autotuned on its first call, then cached in the context); the
// others are the heuristic's candidates, all timed the same way.
GemmResult measure(CudaContext& ctx, const GemmShape& shape) {
  const DType dtype = storage_dtype(shape.precision);
  DeviceBuffer<std::uint8_t> a(shape.M * shape.K * dtype_bytes(dtype));
  DeviceBuffer<std::uint8_t> b(shape.N * shape.K * dtype_bytes(dtype));
  DeviceBuffer<std::uint8_t> d(shape.M * shape.N * dtype_bytes(dtype));
  fill_uniform(ctx, dtype, a.data(), shape.M * shape.K, 1, -1.0f, 1.0f);
  fill_uniform(ctx, dtype, b.data(), shape.N * shape.K, 2, -1.0f, 1.0f);
  gemm(ctx, shape.precision, a.data(), b.data(), d.data(), shape.M, shape.N, shape.K);
  const GemmChoice ours = gemm_choice(ctx, shape.precision, a.data(), b.data(), d.data(), shape.M,
                                      shape.N, shape.K, 0.0f);
  // One launch to size the rounds.
  const double estimate =
      seconds_per_gemm(ctx, *ours.plan, ours.algorithm, a.data(), b.data(), d.data(), 1);
  const int launches = std::clamp(static_cast<int>(kTimedSeconds / estimate), 3, 500);

  GemmResult result{shape};
  result.ours_algorithm = describe(ours.plan->algorithm_info(ours.algorithm));
  result.ours_seconds =
      seconds_per_gemm(ctx, *ours.plan, ours.algorithm, a.data(), b.data(), d.data(), launches);
  const GemmPlan plan(ctx, shape, kCandidates);
  result.candidates = plan.algorithm_count();
  result.best_seconds = 1e30;
  for (int algorithm = 0; algorithm < plan.algorithm_count(); ++algorithm) {
    double seconds = 0;
    try {
      seconds = seconds_per_gemm(ctx, plan, algorithm, a.data(), b.data(), d.data(), launches);
    } catch (const Error& error) {  // a candidate the library then refuses: skip it, say so
      std::fprintf(stderr, "bench_cuda_gemm: %s candidate %d skipped: %s\n",
                   std::string(to_string(shape.precision)).c_str(), algorithm, error.what());
      cudaGetLastError();
      continue;
    }
    if (seconds < result.best_seconds) {
      result.best_seconds = seconds;
      result.best_algorithm = algorithm;
    }
  }
  // Ours is one of the candidates: timing noise alone can put it a hair above the best.
  result.best_seconds = std::min(result.best_seconds, result.ours_seconds);
  ctx.synchronize();
  return result;
}

std::string summary_table(const std::vector<GemmResult>& results, const std::string& device) {
  std::string text = fmt::format("GEMM throughput on {}\n", device);
  text += fmt::format("{:<6} {:>6} {:>6} {:>6} {:>12} {:>12} {:>10} {:>10} {:>10}  {}\n", "prec",
                      "M", "N", "K", "ours_TFLOPs", "best_TFLOPs", "ours/best", "best_algo",
                      "candidates", "ours");
  for (const GemmResult& r : results) {
    text += fmt::format("{:<6} {:>6} {:>6} {:>6} {:>12.1f} {:>12.1f} {:>10.3f} {:>10} {:>10}  {}\n",
                        to_string(r.shape.precision), r.shape.M, r.shape.N, r.shape.K,
                        tflops(r.shape, r.ours_seconds), tflops(r.shape, r.best_seconds),
                        r.best_seconds / r.ours_seconds, r.best_algorithm, r.candidates,
                        r.ours_algorithm);
  }
  return text;
}

}  // namespace
}  // namespace sb::kernels::cuda

int main(int argc, char** argv) {
  using namespace sb::kernels::cuda;
  benchmark::Initialize(&argc, argv);
  bool quick = false;
  std::string summary_path;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--summary" && i + 1 < argc) {
      summary_path = argv[++i];
    } else {
      std::fprintf(stderr, "bench_cuda_gemm: unknown argument '%s' (known: --quick, --summary FILE, "
                           "--benchmark_*)\n", arg.c_str());
      return 2;
    }
  }
  auto write_summary = [&](const std::string& text) {
    std::fputs(text.c_str(), stdout);
    if (!summary_path.empty()) std::ofstream(summary_path) << text;
  };
  if (visible_device_count() == 0) {
    write_summary("SKIP: bench_cuda_gemm: no CUDA device visible, nothing measured\n");
    return 0;
  }
  try {
    CudaContext ctx(0);
    const std::string device = describe_device(0);
    benchmark::AddCustomContext("gpu", device);
    benchmark::AddCustomContext("cublaslt_candidates", std::to_string(kCandidates));
    std::vector<GemmShape> shapes;
    std::vector<std::int64_t> cubes = quick ? std::vector<std::int64_t>{1024, 2048}
                                            : std::vector<std::int64_t>{1024, 2048, 4096, 8192};
    for (GemmPrecision precision : kGemmPrecisions) {
      for (std::int64_t n : cubes) shapes.push_back({n, n, n, precision});
      if (!quick) shapes.push_back({8192, 3072, 768, precision});  // GPT-2 MLP up-projection, 8192 tokens
    }
    std::vector<GemmResult> results;
    for (const GemmShape& shape : shapes) {
      const std::string name = fmt::format("gemm/{}/M={}/N={}/K={}", to_string(shape.precision),
                                           shape.M, shape.N, shape.K);
      benchmark::RegisterBenchmark(name.c_str(), [&ctx, &results, shape](benchmark::State& state) {
        GemmResult result{};
        try {
          for (auto _ : state) {
            result = measure(ctx, shape);
            state.SetIterationTime(result.ours_seconds);
          }
        } catch (const std::exception& error) {  // one shape failing keeps the others' numbers
          state.SkipWithError(error.what());
          return;
        }
        results.push_back(result);
        state.counters["TFLOPs_ours"] = tflops(shape, result.ours_seconds);
        state.counters["TFLOPs_best"] = tflops(shape, result.best_seconds);
        state.counters["ours_over_best"] = result.best_seconds / result.ours_seconds;
        state.counters["best_algorithm"] = result.best_algorithm;
        state.counters["candidates"] = result.candidates;
      })->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    write_summary(summary_table(results, device));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "bench_cuda_gemm: %s\n", error.what());
    return 1;
  }
  return 0;
}
