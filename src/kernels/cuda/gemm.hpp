// SPDX-License-Identifier: Apache-2.0
// Mixed-precision GEMM through cuBLASLt: fp32, tf32, fp16 and bf16 storage, fp32 accumulation,
// precision chosen at run time; the three operand layouts of a linear layer's forward and
// backward, an fp32 output for 16-bit inputs (fp32 parameter gradients) and the bias epilogue.
// Leaves out fp8, the GELU epilogue and batched GEMMs (attention uses cuBLAS's).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>

#include "core/tensor.hpp"
#include "kernels/cuda/cuda_context.hpp"
#include "kernels/kernels.hpp"

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

// Which products of row-major a and b make row-major d (M,N):
//   a_bt: d = a (M,K) · b (N,K)ᵀ   (a linear layer's forward: inp · weightᵀ)
//   a_b:  d = a (M,K) · b (K,N)    (its input gradient: dout · weight)
//   at_b: d = a (K,M)ᵀ · b (K,N)   (its weight gradient: doutᵀ · inp)
enum class GemmOperands : int { a_bt, a_b, at_b };

struct GemmShape {
  std::int64_t M, N, K;
  GemmPrecision precision;
  GemmOperands operands = GemmOperands::a_bt;
  bool float_output = false;  // d (and c) fp32 whatever a and b are: A/B 16-bit, C/D fp32
  bool bias = false;          // d += bias (N) on every row, in d's type (cuBLASLt's epilogue)
  // The alignment (bytes, a power of two, at most 256) every pointer of a call has: cuBLASLt's
  // heuristic may propose a kernel that needs up to 256 (its default assumption).
  std::int64_t alignment = 256;
};

// The alignment a call's pointers share (bytes, capped at 256), for GemmShape::alignment.
std::int64_t common_alignment(std::initializer_list<const void*> pointers);

// 2·M·N·K: matmul_forward's count (kernels.hpp), shared by benchmarks and reports.
inline double gemm_flops(const GemmShape& shape) { return matmul_forward_work(shape.M, shape.K, shape.N, 4).flops; }

// What cuBLASLt reports of one algorithm: for failure messages and the benchmark's table.
struct GemmAlgorithmInfo {
  int id = 0;
  std::uint32_t tile = 0, split_k = 1, reduction_scheme = 0, stages = 0;
};
// "algo 21 tile 18 stages 9 split-k 1 reduction none".
std::string describe(const GemmAlgorithmInfo& info);

// The cuBLASLt descriptors of one shape and the algorithms its heuristic proposes for them,
// best-ranked first (gemm() times up to kGemmAutotuneCandidates of them; benchmarks time
// them all). Only algorithms that keep every partial sum in fp32 are proposed: a split-K
// reduction in the output type (INPLACE, OUTPUT_TYPE) rounds partial sums to fp16/bf16, an
// error that scales with the partial sums rather than with d (exact zeros where d cancels).
class GemmPlan {
 public:
  GemmPlan(CudaContext& ctx, GemmShape shape, int max_algorithms);
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  const GemmShape& shape() const;
  int algorithm_count() const;
  GemmAlgorithmInfo algorithm_info(int algorithm) const;
  // Row-major a, b, d as the shape's operands say, in storage_dtype (d fp32 with
  // float_output): d = alpha op(a)·op(b) + beta d (+ bias (N) with the bias epilogue), on the
  // context's stream (asynchronous). Throws if cuBLASLt rejects the algorithm.
  void run(int algorithm, const void* a, const void* b, void* d, float alpha, float beta,
           const void* bias = nullptr) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- gemm() and its autotuning (gemm_autotune.cu) ------------------------------------------
// The first gemm() of a (precision, M, N, K, beta == 0 or not) signature on a context plans
// it, asks the heuristic for up to kGemmAutotuneCandidates algorithms and times each on the
// caller's a and b (CUDA events, a few warm-ups, the fastest of two rounds); the fastest is
// cached in the context and used from then on, so repeated calls are bit-identical. With
// beta == 0 the candidates write the caller's d (the real call overwrites it); otherwise a
// scratch copy of d, so the caller's d receives exactly one alpha a·bᵀ + beta d. A candidate
// wins over a better-ranked one only when more than kGemmAutotuneMargin faster, so that
// timing noise rarely changes the choice between runs. Tuning is off (the heuristic's
// rank 0, reproducible across processes) with SB_GEMM_AUTOTUNE=0 in the environment or
// CudaContext::set_gemm_autotune(false), and skipped while the stream is being captured
// into a CUDA graph (the call then uses rank 0 and tunes at the next uncaptured call).
inline constexpr int kGemmAutotuneCandidates = 8;
inline constexpr double kGemmAutotuneMargin = 0.01;

struct GemmChoice {
  const GemmPlan* plan = nullptr;
  int algorithm = 0;
  bool tuned = false;  // false: rank 0 untimed (tuning off, one candidate, or graph capture)
};

// The plan and algorithm gemm() runs for this call, planning and tuning it if it is the
// first of its signature (then it launches work on the context's stream and waits for it).
GemmChoice gemm_choice(CudaContext& ctx, GemmPrecision precision, const void* a, const void* b,
                       void* d, std::int64_t M, std::int64_t N, std::int64_t K,
                       float beta);
// The same for any shape (operand layout, fp32 output, bias epilogue); bias as run() takes it.
// Both lower shape.alignment to what the pointers and the rows' byte lengths share (gemm()
// and gemm_choice() of one call find the same plan).
GemmChoice gemm_choice(CudaContext& ctx, GemmShape shape, const void* a, const void* b, void* d,
                       float beta, const void* bias = nullptr);

// Plans and their chosen algorithms by call signature, owned by a CudaContext.
struct GemmPlanCache {
  struct Entry {
    std::unique_ptr<GemmPlan> plan;
    int algorithm = 0;
    bool tuned = false;
  };
  // (M, N, K, precision, beta != 0, operands·4 + float_output·2 + bias, alignment)
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t, int, bool, int, std::int64_t>, Entry> plans;
};

// d (M,N) = alpha a (M,K) · b (N,K)ᵀ + beta d, row-major (the layout of matmul_forward:
// inp·weightᵀ), with the algorithm gemm_choice() picks (autotuned, cached per signature).
void gemm(CudaContext& ctx, GemmPrecision precision, const void* a, const void* b, void* d,
          std::int64_t M, std::int64_t N, std::int64_t K, float alpha = 1.0f, float beta = 0.0f);
// d = alpha op(a)·op(b) + beta d (+ bias) for any shape, with the plan gemm_choice() finds
// (callers may leave shape.alignment at its default).
void gemm(CudaContext& ctx, GemmShape shape, const void* a, const void* b, void* d, float alpha,
          float beta, const void* bias = nullptr);

}  // namespace sb::kernels::cuda
