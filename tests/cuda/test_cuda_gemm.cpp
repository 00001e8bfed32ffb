// gemm() per precision against a double-precision product of the same (rounded) inputs, with
// the GEMM tolerance table; every heuristic candidate of a plan; names and parsing. Leaves
// out speed (bench/bench_cuda_gemm.cu).
#include <gtest/gtest.h>

#include <cmath>
#include <string_view>
#include <vector>

#include "core/rng.hpp"
#include "cuda_test_support.hpp"
#include "kernels/cuda/convert.hpp"
#include "kernels/cuda/gemm.hpp"

namespace sb::kernels::testing {
namespace {

using cuda::GemmPrecision;

// |d - exact| <= output_rounding |exact| + accumulation sum_k |a_ik b_jk| (+ |beta d0|), with
// `exact` the double product of the inputs as stored (already rounded to the storage type).
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
  if (algorithm < 0) {
    cuda::gemm(ctx, precision, a.stored.data(), b.stored.data(), d.stored.data(), c.M, c.N, c.K,
               c.alpha, c.beta);
  } else {
    const cuda::GemmPlan plan(ctx, {c.M, c.N, c.K, precision}, 16);
    plan.run(algorithm % plan.algorithm_count(), a.stored.data(), b.stored.data(),
             d.stored.data(), c.alpha, c.beta);
  }
  const std::vector<float> actual = to_host_float(ctx, precision, d.stored, c.M * c.N);
  const GemmTolerance& tol = gemm_tolerance(precision);
  i64 failed = 0;
  double worst_ratio = 0;
  std::string worst;
  for (i64 i = 0; i < c.M; ++i)
    for (i64 j = 0; j < c.N; ++j) {
      double exact = c.beta * static_cast<double>(d.rounded[i * c.N + j]);
      double magnitude = std::fabs(exact);
      for (i64 k = 0; k < c.K; ++k) {
        const double product = static_cast<double>(a.rounded[i * c.K + k]) * b.rounded[j * c.K + k];
        exact += c.alpha * product;
        magnitude += std::fabs(c.alpha * product);
      }
      const double error = std::fabs(actual[i * c.N + j] - exact);
      const double allowed = tol.output_rounding * std::fabs(exact) + tol.accumulation * magnitude;
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
                                 "out of tolerance; worst {} ({})",
                                 to_string(precision), c.M, c.N, c.K, c.alpha, c.beta, algorithm,
                                 failed, c.M * c.N, worst, tol.reason);
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

// Every candidate the heuristic offers (the benchmark times them all) computes the same GEMM.
TEST_P(CudaGemm, EveryHeuristicCandidateIsCorrect) {
  cuda::CudaContext ctx(0);
  const cuda::GemmPlan plan(ctx, {192, 256, 512, GetParam()}, 16);
  ASSERT_GE(plan.algorithm_count(), 1);
  for (int algorithm = 0; algorithm < plan.algorithm_count(); ++algorithm)
    EXPECT_EQ(failures_of(ctx, GetParam(), {192, 256, 512, 1.0f, 0.0f}, algorithm), 0)
        << "algorithm " << algorithm;
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
