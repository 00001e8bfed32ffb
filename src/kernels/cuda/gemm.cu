// SPDX-License-Identifier: Apache-2.0
// GemmPlan: cuBLASLt descriptors, heuristic algorithm query (fp32 partial sums only) and
// launch. Leaves out the choice among the candidates (gemm_autotune.cu).
#include "kernels/cuda/gemm.hpp"

#include <vector>

#include "kernels/cuda/cuda_check.hpp"

namespace sb::kernels::cuda {

std::string_view to_string(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::fp32: return "fp32";
    case GemmPrecision::tf32: return "tf32";
    case GemmPrecision::fp16: return "fp16";
    case GemmPrecision::bf16: return "bf16";
  }
  return "unknown";
}

GemmPrecision parse_gemm_precision(std::string_view name) {
  for (GemmPrecision precision : kGemmPrecisions)
    if (name == to_string(precision)) return precision;
  throw UserError(fmt::format("unknown GEMM precision '{}' (known: fp32, tf32, fp16, bf16)", name));
}

DType storage_dtype(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::fp32:
    case GemmPrecision::tf32: return DType::f32;
    case GemmPrecision::fp16: return DType::f16;
    case GemmPrecision::bf16: return DType::bf16;
  }
  return DType::f32;
}

namespace {

cudaDataType_t cuda_data_type(GemmPrecision precision) {
  switch (storage_dtype(precision)) {
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

}  // namespace

struct GemmPlan::Impl {
  CudaContext* ctx = nullptr;
  GemmShape shape{};
  cublasLtMatmulDesc_t operation = nullptr;
  cublasLtMatrixLayout_t b_layout = nullptr, a_layout = nullptr, d_layout = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algorithms;

  ~Impl() {
    if (d_layout) cublasLtMatrixLayoutDestroy(d_layout);
    if (a_layout) cublasLtMatrixLayoutDestroy(a_layout);
    if (b_layout) cublasLtMatrixLayoutDestroy(b_layout);
    if (operation) cublasLtMatmulDescDestroy(operation);
  }
};

std::int64_t common_alignment(std::initializer_list<const void*> pointers) {
  std::uintptr_t bits = 256;
  for (const void* p : pointers)
    if (p) bits |= reinterpret_cast<std::uintptr_t>(p);
  return static_cast<std::int64_t>(bits & (~bits + 1));  // lowest set bit, at most 256
}

// Column-major view: row-major d (M,N) is dᵀ (N,M) = op(b)ᵀ · op(a)ᵀ, so cuBLASLt's A is our b
// and its B is our a. a_bt: A = b stored (K,N) op T, B = a stored (K,M) op N (the "TN" layout
// every Hopper tensor-core kernel supports); a_b: A = b stored (N,K) op N, B = a stored (K,M)
// op N; at_b: A = b stored (N,K) op N, B = a stored (M,K) op T.
GemmPlan::GemmPlan(CudaContext& ctx, GemmShape shape, int max_algorithms)
    : impl_(std::make_unique<Impl>()) {
  SB_CHECK(shape.M > 0 && shape.N > 0 && shape.K > 0 && max_algorithms > 0,
           "GemmPlan: M={} N={} K={} and {} algorithms must be positive", shape.M, shape.N, shape.K,
           max_algorithms);
  SB_CHECK(shape.alignment > 0 && shape.alignment <= 256 && (shape.alignment & (shape.alignment - 1)) == 0,
           "GemmPlan: alignment {} is not a power of two up to 256", shape.alignment);
  Impl& p = *impl_;
  p.ctx = &ctx;
  p.shape = shape;
  const cublasComputeType_t compute = shape.precision == GemmPrecision::tf32
                                          ? CUBLAS_COMPUTE_32F_FAST_TF32
                                          : CUBLAS_COMPUTE_32F;
  SB_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.operation, compute, CUDA_R_32F));
  const bool a_bt = shape.operands == GemmOperands::a_bt, at_b = shape.operands == GemmOperands::at_b;
  const cublasOperation_t op_a = a_bt ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = at_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  SB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.operation, CUBLASLT_MATMUL_DESC_TRANSA,
                                                 &op_a, sizeof op_a));
  SB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.operation, CUBLASLT_MATMUL_DESC_TRANSB,
                                                 &op_b, sizeof op_b));
  if (shape.bias) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    SB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.operation, CUBLASLT_MATMUL_DESC_EPILOGUE,
                                                   &epilogue, sizeof epilogue));
  }
  const cudaDataType_t type = cuda_data_type(shape.precision);
  const cudaDataType_t d_type = shape.float_output ? CUDA_R_32F : type;
  const auto M = static_cast<std::uint64_t>(shape.M), N = static_cast<std::uint64_t>(shape.N),
             K = static_cast<std::uint64_t>(shape.K);
  if (a_bt)
    SB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b_layout, type, K, N, shape.K));
  else
    SB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b_layout, type, N, K, shape.N));
  if (at_b)
    SB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a_layout, type, M, K, shape.M));
  else
    SB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a_layout, type, K, M, shape.K));
  SB_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.d_layout, d_type, N, M, shape.N));

  cublasLtMatmulPreference_t preference = nullptr;
  SB_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&preference));
  const std::uint64_t workspace = ctx.cublaslt_workspace_bytes();
  // Split-K partial sums stay in fp32 (the compute type): INPLACE and OUTPUT_TYPE reduce them
  // in d's type, and bf16 rounding of a partial sum (2^-9 of it) is no fp32 accumulation.
  const std::uint32_t reduction_schemes =
      CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  cublasStatus_t set = cublasLtMatmulPreferenceSetAttribute(
      preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof workspace);
  if (set == CUBLAS_STATUS_SUCCESS)
    set = cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                               &reduction_schemes, sizeof reduction_schemes);
  const auto alignment = static_cast<std::uint32_t>(shape.alignment);
  for (const cublasLtMatmulPreferenceAttributes_t attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    if (set == CUBLAS_STATUS_SUCCESS)
      set = cublasLtMatmulPreferenceSetAttribute(preference, attribute, &alignment, sizeof alignment);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<std::size_t>(max_algorithms));
  int returned = 0;
  const cublasStatus_t query =
      set != CUBLAS_STATUS_SUCCESS
          ? set
          : cublasLtMatmulAlgoGetHeuristic(ctx.cublaslt(), p.operation, p.b_layout, p.a_layout,
                                           p.d_layout, p.d_layout, preference, max_algorithms,
                                           results.data(), &returned);
  cublasLtMatmulPreferenceDestroy(preference);
  SB_CUBLAS_CHECK(query);
  for (int i = 0; i < returned; ++i)
    if (results[static_cast<std::size_t>(i)].state == CUBLAS_STATUS_SUCCESS)
      p.algorithms.push_back(results[static_cast<std::size_t>(i)]);
  SB_CHECK(!p.algorithms.empty(), "cuBLASLt proposes no algorithm for a {} GEMM M={} N={} K={}",
           to_string(shape.precision), shape.M, shape.N, shape.K);
}

GemmPlan::~GemmPlan() = default;

const GemmShape& GemmPlan::shape() const { return impl_->shape; }

int GemmPlan::algorithm_count() const { return static_cast<int>(impl_->algorithms.size()); }

GemmAlgorithmInfo GemmPlan::algorithm_info(int algorithm) const {
  SB_CHECK(algorithm >= 0 && algorithm < algorithm_count(),
           "GemmPlan::algorithm_info: algorithm {} of {}", algorithm, algorithm_count());
  const cublasLtMatmulAlgo_t& algo = impl_->algorithms[static_cast<std::size_t>(algorithm)].algo;
  GemmAlgorithmInfo info;
  std::size_t written = 0;
  auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attribute, auto& value) {
    SB_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof value,
                                                         &written));
  };
  get(CUBLASLT_ALGO_CONFIG_ID, info.id);
  get(CUBLASLT_ALGO_CONFIG_TILE_ID, info.tile);
  get(CUBLASLT_ALGO_CONFIG_STAGES_ID, info.stages);
  get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, info.split_k);
  get(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, info.reduction_scheme);
  return info;
}

std::string describe(const GemmAlgorithmInfo& info) {
  const char* reduction = "mixed";
  switch (info.reduction_scheme) {
    case CUBLASLT_REDUCTION_SCHEME_NONE: reduction = "none"; break;
    case CUBLASLT_REDUCTION_SCHEME_INPLACE: reduction = "inplace"; break;
    case CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE: reduction = "compute-type"; break;
    case CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE: reduction = "output-type"; break;
    default: break;
  }
  return fmt::format("algo {} tile {} stages {} split-k {} reduction {}", info.id, info.tile,
                     info.stages, info.split_k, reduction);
}

void GemmPlan::run(int algorithm, const void* a, const void* b, void* d, float alpha,
                   float beta, const void* bias) const {
  const Impl& p = *impl_;
  SB_CHECK(algorithm >= 0 && algorithm < algorithm_count(),
           "GemmPlan::run: algorithm {} of {}", algorithm, algorithm_count());
  SB_CHECK((bias != nullptr) == p.shape.bias, "GemmPlan::run: a bias {} for a plan {} the bias epilogue",
           bias ? "given" : "missing", p.shape.bias ? "with" : "without");
  if (bias)  // the pointer is an attribute of the descriptor; calls are stream-ordered
    SB_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                                   &bias, sizeof bias));
  SB_CUBLAS_CHECK(cublasLtMatmul(p.ctx->cublaslt(), p.operation, &alpha, b, p.b_layout, a,
                                 p.a_layout, &beta, d, p.d_layout, d, p.d_layout,
                                 &p.algorithms[static_cast<std::size_t>(algorithm)].algo,
                                 p.ctx->cublaslt_workspace(), p.ctx->cublaslt_workspace_bytes(),
                                 p.ctx->stream()));
}

}  // namespace sb::kernels::cuda
