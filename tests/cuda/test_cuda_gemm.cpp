// SPDX-License-Identifier: Apache-2.0
// gemm() per precision against a double-precision product of the same (rounded) inputs, with
// the GEMM tolerance table; every heuristic candidate of a plan; autotuning's cache; names and
// parsing. Leaves
// out speed (bench/bench_cuda_gemm.cu).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "core/rng.hpp"
#include "cuda_test_support.hpp"
#include "kernels/cuda/convert.hpp"
#include "kernels/cuda/gemm.hpp"

namespace sb::kernels::testing {
namespace {

using cuda::GemmPrecision;

// |d - exact| <= output_rounding (|exact| + [beta != 0] |alpha a b|) + accumulation sum_k |a_ik b_jk|
// (+ |beta d0| in the sum), with `exact` the double product of the inputs as stored (already
// rounded to the storage type) and `alpha a b` its product part alone. The accumulation term
// scales with the magnitudes, not with d, so cancellation is allowed for: fp32 sums of K
// products are within K 2^-24 of them (4e-6 at K = 64, well inside 1e-4). The second rounding
// term is the epilogue's: with beta != 0 and a 16-bit d, cuBLASLt's Hopper kernels round
// alpha a b to the storage type before adding beta d0, so a result that cancels keeps that
// rounding of the product. Seen on an H200 (2026-11-30): the 64³ beta = 1 bf16 case gave
// d[58,1] = 0 for an exact 0.00384 on every candidate, split-K or not; the product there was
// near 1.5, whose bf16 spacing is 2^-7. With beta = 0 the term is left out.
struct GemmTolerance {
  GemmPrecision precision;
  double output_rounding, accumulation;
  std::string_view reason;
};

inline constexpr GemmTolerance kGemmTolerances[] = {
    {GemmPrecision::fp32, 2.4e-7, 1e-5,
     "fp32 sums in another order (split-K, tiles): ~sqrt(K) ulp of the magnitudes"},
    {GemmPrecision::tf32, 2.4e-7, 3e-3,
     "tensor cores round a and b to tf32 (10-bit mantissa, 2^-11 each) before multiplying"},
    {GemmPrecision::fp16, 1e-3, 1e-4,
     "d stored in fp16 (unit roundoff 2^-11); fp16 products exact, fp32 tensor-core sums"},
    {GemmPrecision::bf16, 8e-3, 1e-4,
     "d stored in bf16 (unit roundoff 2^-8); bf16 products exact, fp32 tensor-core sums"},
};

const GemmTolerance& gemm_tolerance(GemmPrecision precision) {
  for (const GemmTolerance& entry : kGemmTolerances)
    if (entry.precision == precision) return entry;
  throw Error("no GEMM tolerance");
}

// A float matrix on the device rounded to the storage type of `precision`, and its rounded
// values back on the host.
struct StoredMatrix {
  cuda::DeviceBuffer<std::uint8_t> stored;
  std::vector<float> rounded;
};

StoredMatrix make_stored(cuda::CudaContext& ctx, GemmPrecision precision, i64 n, std::uint64_t stream) {
  const CounterRng rng(2024, stream);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) values[i] = static_cast<float>(rng.normal(i));
  const DType dtype = cuda::storage_dtype(precision);
  StoredMatrix m{cuda::DeviceBuffer<std::uint8_t>(n * dtype_bytes(dtype)), {}};
  const cuda::DeviceBuffer<float> as_float(values);
  cuda::convert_from_float(ctx, dtype, m.stored.data(), as_float.data(), n);
  cuda::DeviceBuffer<float> back(n);
  cuda::convert_to_float(ctx, dtype, back.data(), m.stored.data(), n);
  ctx.synchronize();
  m.rounded = back.to_host();
  return m;
}

std::vector<float> to_host_float(cuda::CudaContext& ctx, GemmPrecision precision,
                                 const cuda::DeviceBuffer<std::uint8_t>& stored, i64 n) {
  cuda::DeviceBuffer<float> back(n);
  cuda::convert_to_float(ctx, cuda::storage_dtype(precision), back.data(), stored.data(), n);
  ctx.synchronize();
  return back.to_host();
}

// Candidates per plan that the tests check: at least as many as gemm() times.
constexpr int kCandidatesChecked = 16;
static_assert(kCandidatesChecked >= cuda::kGemmAutotuneCandidates);

struct GemmCase {
  i64 M, N, K;
  float alpha, beta;
};

// Runs one case with algorithm `algorithm` of a plan (or gemm() when algorithm < 0) and
// returns the number of elements out of tolerance, reporting the worst.
i64 failures_of(cuda::CudaContext& ctx, GemmPrecision precision, const GemmCase& c, int algorithm) {
  StoredMatrix a = make_stored(ctx, precision, c.M * c.K, 1);
  StoredMatrix b = make_stored(ctx, precision, c.N * c.K, 2);
  StoredMatrix d = make_stored(ctx, precision, c.M * c.N, 3);
  std::string ran;  // which cuBLASLt algorithm, for the failure message
  if (algorithm < 0) {
    cuda::gemm(ctx, precision, a.stored.data(), b.stored.data(), d.stored.data(), c.M, c.N, c.K,
               c.alpha, c.beta);
    const cuda::GemmChoice choice = cuda::gemm_choice(ctx, precision, a.stored.data(),
                                                      b.stored.data(), d.stored.data(), c.M, c.N,
                                                      c.K, c.beta);  // cached: runs nothing
    ran = fmt::format("gemm() chose candidate {} ({}), {}", choice.algorithm,
                      choice.tuned ? "autotuned" : "rank 0",
                      describe(choice.plan->algorithm_info(choice.algorithm)));
  } else {
    const cuda::GemmPlan plan(ctx, {c.M, c.N, c.K, precision}, kCandidatesChecked);
    const int run = algorithm % plan.algorithm_count();
    plan.run(run, a.stored.data(), b.stored.data(), d.stored.data(), c.alpha, c.beta);
    ran = describe(plan.algorithm_info(run));
  }
  const std::vector<float> actual = to_host_float(ctx, precision, d.stored, c.M * c.N);
  const GemmTolerance& tol = gemm_tolerance(precision);
  i64 failed = 0;
  double worst_ratio = 0;
  std::string worst;
  for (i64 i = 0; i < c.M; ++i)
    for (i64 j = 0; j < c.N; ++j) {
      double product_part = 0, magnitude = std::fabs(c.beta * static_cast<double>(d.rounded[i * c.N + j]));
      for (i64 k = 0; k < c.K; ++k) {
        const double product = static_cast<double>(a.rounded[i * c.K + k]) * b.rounded[j * c.K + k];
        product_part += c.alpha * product;
        magnitude += std::fabs(c.alpha * product);
      }
      const double exact = product_part + c.beta * static_cast<double>(d.rounded[i * c.N + j]);
      const double error = std::fabs(actual[i * c.N + j] - exact);
      const double epilogue_rounding = c.beta != 0 ? std::fabs(product_part) : 0.0;
      const double allowed = tol.output_rounding * (std::fabs(exact) + epilogue_rounding) +
                             tol.accumulation * magnitude;
      if (error <= allowed) continue;  // NaN fails
      ++failed;
      const double ratio = allowed > 0 ? error / allowed : INFINITY;
      if (!(ratio <= worst_ratio)) {
        worst_ratio = ratio;
        worst = fmt::format("d[{},{}] = {:.9g}, exact {:.9g}, allowed error {:.3g}", i, j,
                            actual[i * c.N + j], exact, allowed);
      }
    }
  if (failed > 0) {
    ADD_FAILURE() << fmt::format("{} gemm M={} N={} K={} alpha={} beta={} algorithm {}: {} of {} "
                                 "out of tolerance; worst {} ({}); {}",
                                 to_string(precision), c.M, c.N, c.K, c.alpha, c.beta, algorithm,
                                 failed, c.M * c.N, worst, tol.reason, ran);
  }
  return failed;
}

class CudaGemm : public CudaTest, public ::testing::WithParamInterface<GemmPrecision> {};

// N and K multiples of 8 (16-byte rows for 16-bit types, as tensor-core kernels need);
// M odd; beta = 1 accumulates onto d as the matmul backward does.
TEST_P(CudaGemm, MatchesDoubleReference) {
  cuda::CudaContext ctx(0);
  for (const GemmCase& c : {GemmCase{257, 136, 520, 1.0f, 0.0f}, GemmCase{64, 64, 64, 1.0f, 1.0f},
                            GemmCase{1, 8, 8, 1.0f, 0.0f}, GemmCase{129, 256, 1024, 0.5f, 1.0f}})
    EXPECT_EQ(failures_of(ctx, GetParam(), c, -1), 0);
}

// Every candidate the heuristic offers (gemm()'s autotuning may pick any of the first
// kGemmAutotuneCandidates; the benchmark times them all) computes the same GEMM, including
// the cancelling beta = 1 case.
TEST_P(CudaGemm, EveryHeuristicCandidateIsCorrect) {
  cuda::CudaContext ctx(0);
  for (const GemmCase& c : {GemmCase{192, 256, 512, 1.0f, 0.0f}, GemmCase{64, 64, 64, 1.0f, 1.0f},
                            GemmCase{129, 256, 1024, 0.5f, 1.0f}}) {
    const cuda::GemmPlan plan(ctx, {c.M, c.N, c.K, GetParam()}, kCandidatesChecked);
    ASSERT_GE(plan.algorithm_count(), 1);
    for (int algorithm = 0; algorithm < plan.algorithm_count(); ++algorithm)
      EXPECT_EQ(failures_of(ctx, GetParam(), c, algorithm), 0) << "algorithm " << algorithm;
  }
}

// No candidate reduces split-K partial sums in the 16-bit output type (a rounding of every
// partial sum, which the tolerance above does not admit), at the test shapes and the
// benchmark's GPT-2 shape alike.
TEST_P(CudaGemm, EveryCandidateReducesInFp32) {
  cuda::CudaContext ctx(0);
  for (const cuda::GemmShape& shape : {cuda::GemmShape{64, 64, 64, GetParam()},
                                       cuda::GemmShape{8, 8, 8192, GetParam()},
                                       cuda::GemmShape{8192, 3072, 768, GetParam()}}) {
    const cuda::GemmPlan plan(ctx, shape, kCandidatesChecked);
    for (int algorithm = 0; algorithm < plan.algorithm_count(); ++algorithm) {
      const cuda::GemmAlgorithmInfo info = plan.algorithm_info(algorithm);
      EXPECT_TRUE(info.reduction_scheme == CUBLASLT_REDUCTION_SCHEME_NONE ||
                  info.reduction_scheme == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)
          << fmt::format("{} M={} N={} K={} candidate {}: {}", to_string(shape.precision), shape.M,
                         shape.N, shape.K, algorithm, describe(info));
    }
  }
}

// gemm() tunes once per signature and then repeats its choice: the same plan and algorithm,
// bit-identical results; with tuning off it runs rank 0 untimed.
TEST_P(CudaGemm, AutotunedChoiceIsCachedAndRepeatsBitForBit) {
  cuda::CudaContext ctx(0);
  ctx.set_gemm_autotune(true);  // whatever SB_GEMM_AUTOTUNE says
  const i64 M = 256, N = 384, K = 512;
  StoredMatrix a = make_stored(ctx, GetParam(), M * K, 1);
  StoredMatrix b = make_stored(ctx, GetParam(), N * K, 2);
  cuda::DeviceBuffer<std::uint8_t> d(M * N * dtype_bytes(cuda::storage_dtype(GetParam())));
  std::vector<std::vector<float>> results;
  std::vector<cuda::GemmChoice> choices;
  for (int call = 0; call < 2; ++call) {
    cuda::gemm(ctx, GetParam(), a.stored.data(), b.stored.data(), d.data(), M, N, K);
    choices.push_back(cuda::gemm_choice(ctx, GetParam(), a.stored.data(), b.stored.data(),
                                        d.data(), M, N, K, 0.0f));
    results.push_back(to_host_float(ctx, GetParam(), d, M * N));
  }
  EXPECT_EQ(choices[0].plan, choices[1].plan);
  EXPECT_EQ(choices[0].algorithm, choices[1].algorithm);
  EXPECT_EQ(choices[0].tuned, choices[0].plan->algorithm_count() > 1);
  EXPECT_LT(choices[0].algorithm, cuda::kGemmAutotuneCandidates);
  EXPECT_EQ(std::memcmp(results[0].data(), results[1].data(), results[0].size() * sizeof(float)), 0);

  ctx.set_gemm_autotune(false);
  const cuda::GemmChoice untuned = cuda::gemm_choice(ctx, GetParam(), a.stored.data(),
                                                     b.stored.data(), d.data(), M, N, K, 0.0f);
  EXPECT_EQ(untuned.algorithm, 0);
  EXPECT_FALSE(untuned.tuned);
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaGemm, ::testing::ValuesIn(cuda::kGemmPrecisions),
                         [](const auto& info) { return std::string(cuda::to_string(info.param)); });

// 4-byte types take any shape: odd sizes in every dimension.
TEST_F(CudaTest, Fp32GemmTakesOddShapes) {
  cuda::CudaContext ctx(0);
  for (GemmPrecision precision : {GemmPrecision::fp32, GemmPrecision::tf32})
    EXPECT_EQ(failures_of(ctx, precision, {33, 17, 9, 1.0f, 0.0f}, -1), 0);
}

// The kernel table's matmul is plain fp32: no TF32 rounding even at K = 4096.
TEST_F(CudaTest, MatmulForwardIsNotTf32) {
  const i64 BT = 3, C = 4096, OC = 5;
  std::vector<float> inp(BT * C, 1.0f + 1.0f / 4096.0f), weight(OC * C, 1.0f);  // 1 + 2^-12: not a tf32 value
  const cuda::DeviceBuffer<float> d_inp(inp), d_weight(weight);
  cuda::DeviceBuffer<float> out(BT * OC);
  cuda::matmul_forward(out.data(), d_inp.data(), d_weight.data(), nullptr, BT, C, OC);
  for (float value : out.to_host()) EXPECT_EQ(value, 4097.0f);
}

TEST(GemmPrecisionNames, RoundTripAndRejectUnknown) {
  for (GemmPrecision precision : cuda::kGemmPrecisions)
    EXPECT_EQ(cuda::parse_gemm_precision(cuda::to_string(precision)), precision);
  EXPECT_THROW(cuda::parse_gemm_precision("fp8"), UserError);
  EXPECT_EQ(cuda::storage_dtype(GemmPrecision::bf16), DType::bf16);
}

}  // namespace
}  // namespace sb::kernels::testing
