// Mixed-precision GEMM through cuBLASLt: fp32, tf32, fp16 and bf16 storage, fp32 accumulation,
// precision chosen at run time. Leaves out fp8, epilogues (bias, GELU) and batched GEMMs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <tuple>

#include "core/tensor.hpp"
#include "kernels/cuda/cuda_context.hpp"

namespace sb::kernels::cuda {

// fp32: fp32 storage and arithmetic; tf32: fp32 storage, tensor cores round inputs to tf32;
// fp16, bf16: 16-bit storage of a, b and d, products accumulated in fp32.
enum class GemmPrecision : int { fp32, tf32, fp16, bf16 };
inline constexpr GemmPrecision kGemmPrecisions[] = {GemmPrecision::fp32, GemmPrecision::tf32,
                                                    GemmPrecision::fp16, GemmPrecision::bf16};
std::string_view to_string(GemmPrecision precision);
// "fp32" | "tf32" | "fp16" | "bf16"; throws UserError on anything else.
GemmPrecision parse_gemm_precision(std::string_view name);
// Element type of a, b and d: f32, f32, f16, bf16.
DType storage_dtype(GemmPrecision precision);

struct GemmShape {
  std::int64_t M, N, K;
  GemmPrecision precision;
  auto key() const { return std::make_tuple(M, N, K, static_cast<int>(precision)); }
};

// 2·M·N·K: the one FLOP count of a GEMM, shared by benchmarks and reports.
inline double gemm_flops(const GemmShape& shape) {
  return 2.0 * static_cast<double>(shape.M) * static_cast<double>(shape.N) *
         static_cast<double>(shape.K);
}

// The cuBLASLt descriptors of one shape and the algorithms its heuristic proposes for them,
// best-ranked first. gemm() runs algorithm 0; benchmarks time them all.
class GemmPlan {
 public:
  GemmPlan(CudaContext& ctx, GemmShape shape, int max_algorithms);
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  const GemmShape& shape() const;
  int algorithm_count() const;
  // Row-major a (M,K), b (N,K), d (M,N), in storage_dtype: d = alpha a·bᵀ + beta d, on the
  // context's stream (asynchronous). Throws if cuBLASLt rejects the algorithm.
  void run(int algorithm, const void* a, const void* b, void* d, float alpha, float beta) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Plans by shape, owned by a CudaContext.
struct GemmPlanCache {
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int>, std::unique_ptr<GemmPlan>> plans;
};

// d (M,N) = alpha a (M,K) · b (N,K)ᵀ + beta d, row-major (the layout of matmul_forward:
// inp·weightᵀ), with cuBLASLt's first-ranked algorithm; the plan is cached per shape.
void gemm(CudaContext& ctx, GemmPrecision precision, const void* a, const void* b, void* d,
          std::int64_t M, std::int64_t N, std::int64_t K, float alpha = 1.0f, float beta = 0.0f);

}  // namespace sb::kernels::cuda
