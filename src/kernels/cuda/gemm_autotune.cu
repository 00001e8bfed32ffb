// SPDX-License-Identifier: Apache-2.0
// gemm() and the choice of its algorithm: the heuristic's candidates timed with CUDA events
// on the first call of a signature, the fastest cached in the context (policy in gemm.hpp).
// Leaves out persistence across processes and re-tuning when clocks or co-tenants change.
#include <algorithm>

#include "kernels/cuda/cuda_check.hpp"
#include "kernels/cuda/device_buffer.hpp"
#include "kernels/cuda/gemm.hpp"

namespace sb::kernels::cuda {

namespace {

constexpr int kWarmups = 2;
constexpr int kRounds = 2;                // per candidate; the fastest round counts
constexpr double kRoundSeconds = 0.004;   // launches per round: about this long, 3 to 50

// CUDA events of one timing, destroyed however the timing ends.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  EventPair() {
    SB_CUDA_CHECK(cudaEventCreate(&start));
    SB_CUDA_CHECK(cudaEventCreate(&stop));
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

// Seconds per launch of `launches` back-to-back runs of one algorithm.
double time_launches(CudaContext& ctx, const EventPair& events, const GemmPlan& plan,
                     int algorithm, const void* a, const void* b, void* d, float beta,
                     const void* bias, int launches) {
  SB_CUDA_CHECK(cudaEventRecord(events.start, ctx.stream()));
  for (int i = 0; i < launches; ++i) plan.run(algorithm, a, b, d, 1.0f, beta, bias);
  SB_CUDA_CHECK(cudaEventRecord(events.stop, ctx.stream()));
  SB_CUDA_CHECK(cudaEventSynchronize(events.stop));
  float ms = 0;
  SB_CUDA_CHECK(cudaEventElapsedTime(&ms, events.start, events.stop));
  return static_cast<double>(ms) * 1e-3 / launches;
}

// The fastest candidate of `plan`, timed writing `d` (the caller's when beta == 0, else a
// scratch copy). A candidate that cuBLASLt refuses at launch is skipped; rank 0 is the
// fallback when every candidate is refused (the real call then reports the error).
int fastest_algorithm(CudaContext& ctx, const GemmPlan& plan, const void* a, const void* b,
                      void* d, float beta, const void* bias) {
  const EventPair events;
  int launches = 0;
  int best = 0;
  double best_seconds = 0;
  for (int algorithm = 0; algorithm < plan.algorithm_count(); ++algorithm) {
    double seconds = 1e30;
    try {
      for (int i = 0; i < kWarmups; ++i) plan.run(algorithm, a, b, d, 1.0f, beta, bias);
      if (launches == 0) {  // sized once, on the best-ranked candidate, the same for all
        const double estimate = time_launches(ctx, events, plan, algorithm, a, b, d, beta, bias, 1);
        launches = std::clamp(static_cast<int>(kRoundSeconds / std::max(estimate, 1e-7)), 3, 50);
      }
      for (int round = 0; round < kRounds; ++round)
        seconds = std::min(seconds, time_launches(ctx, events, plan, algorithm, a, b, d, beta, bias, launches));
    } catch (const Error&) {
      cudaGetLastError();  // a refused launch leaves no sticky error; clear a stray one
      SB_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
      continue;
    }
    if (best_seconds == 0 || seconds < best_seconds * (1.0 - kGemmAutotuneMargin)) {
      best = algorithm;
      best_seconds = seconds;
    }
  }
  return best;
}

bool stream_is_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  SB_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

}  // namespace

GemmChoice gemm_choice(CudaContext& ctx, GemmShape shape, const void* a, const void* b, void* d,
                       float beta, const void* bias) {
  // Every row of a matrix starts where its pointer plus a multiple of its row's bytes does.
  const auto in_bytes = static_cast<std::uintptr_t>(dtype_bytes(storage_dtype(shape.precision)));
  const std::uintptr_t d_bytes = shape.float_output ? sizeof(float) : in_bytes;
  const auto row = [](std::int64_t count, std::uintptr_t bytes) {
    return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(count) * bytes);
  };
  const std::int64_t a_row = shape.operands == GemmOperands::at_b ? shape.M : shape.K;
  const std::int64_t b_row = shape.operands == GemmOperands::a_bt ? shape.K : shape.N;
  shape.alignment = std::min(shape.alignment, common_alignment({a, b, d, bias, row(a_row, in_bytes),
                                                                row(b_row, in_bytes), row(shape.N, d_bytes)}));
  const int variant = static_cast<int>(shape.operands) * 4 + (shape.float_output ? 2 : 0) + (shape.bias ? 1 : 0);
  GemmPlanCache::Entry& entry = ctx.gemm_plans().plans[std::make_tuple(
      shape.M, shape.N, shape.K, static_cast<int>(shape.precision), beta != 0.0f, variant, shape.alignment)];
  if (!entry.plan) {
    entry.plan = std::make_unique<GemmPlan>(ctx, shape, kGemmAutotuneCandidates);
    entry.algorithm = 0;
    entry.tuned = false;
  }
  const bool tune = ctx.gemm_autotune() && entry.plan->algorithm_count() > 1;
  if (tune && !entry.tuned && !stream_is_capturing(ctx.stream())) {
    const std::size_t d_bytes = static_cast<std::size_t>(shape.M) * static_cast<std::size_t>(shape.N) *
                                (shape.float_output ? sizeof(float) : dtype_bytes(storage_dtype(shape.precision)));
    if (beta == 0.0f) {
      entry.algorithm = fastest_algorithm(ctx, *entry.plan, a, b, d, beta, bias);
    } else {
      DeviceBuffer<std::uint8_t> scratch_d(static_cast<std::int64_t>(d_bytes));
      SB_CUDA_CHECK(cudaMemcpyAsync(scratch_d.data(), d, d_bytes, cudaMemcpyDeviceToDevice,
                                    ctx.stream()));
      entry.algorithm = fastest_algorithm(ctx, *entry.plan, a, b, scratch_d.data(), beta, bias);
      SB_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));  // before cudaFree of the scratch
    }
    entry.tuned = true;
  }
  return {entry.plan.get(), tune ? entry.algorithm : 0, tune && entry.tuned};
}

GemmChoice gemm_choice(CudaContext& ctx, GemmPrecision precision, const void* a, const void* b,
                       void* d, std::int64_t M, std::int64_t N, std::int64_t K,
                       float beta) {
  return gemm_choice(ctx, GemmShape{M, N, K, precision}, a, b, d, beta);
}

void gemm(CudaContext& ctx, GemmPrecision precision, const void* a, const void* b, void* d,
          std::int64_t M, std::int64_t N, std::int64_t K, float alpha, float beta) {
  gemm(ctx, GemmShape{M, N, K, precision}, a, b, d, alpha, beta);
}

void gemm(CudaContext& ctx, GemmShape shape, const void* a, const void* b, void* d, float alpha,
          float beta, const void* bias) {
  const GemmChoice choice = gemm_choice(ctx, shape, a, b, d, beta, bias);
  choice.plan->run(choice.algorithm, a, b, d, alpha, beta, bias);
}

}  // namespace sb::kernels::cuda
