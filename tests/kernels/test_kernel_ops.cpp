// SPDX-License-Identifier: Apache-2.0
// Each differentiable kernel from its one description: cpu vs reference<float>, reference<double>
// vs finite differences, cpu repeatability; proof the checks fail. Leaves out speed (bench/).
#include <gtest/gtest.h>

#include "kernel_op_descriptions.hpp"

namespace sb::kernels::testing {
namespace {

template <class Op>
class KernelOpTest : public ::testing::Test {};

using KernelOps = ::testing::Types<MatmulOp, EmbeddingOp, LayernormOp, AttentionOp, GeluOp,
                                   ResidualOp, CrossentropyOp, EmbeddingShardOp, CrossentropyShardOp>;

struct OpNames {
  template <class Op>
  static std::string GetName(int) {
    return Op::name;
  }
};

TYPED_TEST_SUITE(KernelOpTest, KernelOps, OpNames);

TYPED_TEST(KernelOpTest, CpuMatchesReference) {
  for (const TypeParam& op : TypeParam::backend_cases()) {
    report(backend_mismatches(op, kernels_for(Backend::cpu), kernels_for(Backend::reference)),
           op.label());
  }
}

TYPED_TEST(KernelOpTest, ReferenceGradientMatchesFiniteDifferences) {
  const TypeParam op = TypeParam::gradient_case();
  report(gradient_mismatches(op, ReferenceTable<double>{}), op.label());
}

TYPED_TEST(KernelOpTest, CpuRepeatsBitForBit) {
  const TypeParam op = TypeParam::backend_cases().front();
  report(repeat_mismatches(op, kernels_for(Backend::cpu)), op.label());
}

// ---- the checks above can fail ---------------------------------------------------------------

// gelu_backward off by 1e-4 relative: finite differences must notice.
void slightly_wrong_gelu_backward(double* dinp, const double* inp, const double* dout, i64 N) {
  std::vector<double> scaled(dout, dout + N);
  for (double& d : scaled) d *= 1.0001;
  reference::gelu_backward<double>(dinp, inp, scaled.data(), N);
}

TEST(KernelOpChecks, FiniteDifferencesCatchAGradientOffBy1e4) {
  ReferenceTable<double> wrong;
  wrong.gelu_backward = &slightly_wrong_gelu_backward;
  const auto mismatches = gradient_mismatches(GeluOp::gradient_case(), wrong);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0].tensor, "dinp");
  EXPECT_GT(mismatches[0].failed, GeluOp::gradient_case().N / 2);
}

// layernorm_backward that overwrites instead of accumulating: the backend check starts from
// non-zero gradients, so it must notice.
void overwriting_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                                    const float* inp, const float* weight, const float* mean,
                                    const float* rstd, i64 N, i64 C) {
  std::fill(dinp, dinp + N * C, 0.0f);
  cpu::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C);
}

TEST(KernelOpChecks, BackendCheckCatchesOverwrittenGradients) {
  KernelTable wrong = kernels_for(Backend::cpu);
  wrong.layernorm_backward = &overwriting_layernorm_backward;
  const auto mismatches =
      backend_mismatches(LayernormOp{7, 9}, wrong, kernels_for(Backend::reference));
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0].tensor, "dinp");
}

TEST(KernelOpChecks, CompareCountsNaNAsFailure) {
  const std::vector<float> expected{1.0f, 2.0f, 3.0f};
  const std::vector<float> actual{1.0f, NAN, 3.0f};
  const auto mismatches = compare("x", actual, expected, {1e-3, 1e-3});
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0].index, 1);
  EXPECT_TRUE(compare("x", expected, expected, {0, 0}).empty());
}

// ---- contract details the generic checks do not pin down ---------------------------------------

TEST(AttentionKernels, ProbabilitiesAreCausalAndRowsSumToOne) {
  const AttentionOp op{2, 37, 12, 3};
  const Tolerance tol = tolerance_for(DType::f32, "attention", Check::backend_forward);
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    OpState<float> s = make_state<float>(op, 5, 0.0);
    op.forward(kernels_for(backend), s);
    const std::vector<float>& att = s.values["att"];
    for (i64 row = 0; row < op.B * op.NH * op.T; ++row) {
      const i64 t = row % op.T;
      double sum = 0;
      for (i64 t2 = 0; t2 < op.T; ++t2) {
        const float p = att[row * op.T + t2];
        if (t2 > t) ASSERT_EQ(p, 0.0f) << to_string(backend) << " row " << row << " col " << t2;
        sum += p;
      }
      ASSERT_NEAR(sum, 1.0, allowed_error(1.0, tol)) << to_string(backend) << " row " << row;
    }
  }
}

TEST(CrossentropyKernels, LossIsMinusLogProbabilityOfTarget) {
  // logits (1, 3) = [1, 2, 3], target 2: loss = log(e + e^2 + e^3) - 3.
  const std::vector<float> logits{1, 2, 3};
  const std::int32_t target = 2;
  const double expected = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  const Tolerance tol = tolerance_for(DType::f32, "crossentropy", Check::known_value);
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    float loss = 0;
    std::vector<float> probs(3);
    kernels_for(backend).crossentropy_forward(&loss, probs.data(), logits.data(), &target, 1, 3);
    EXPECT_NEAR(loss, expected, allowed_error(expected, tol)) << to_string(backend);
    EXPECT_NEAR(probs[2], std::exp(-expected), allowed_error(std::exp(-expected), tol))
        << to_string(backend);
  }
}

TEST(CrossentropyKernels, HugeLogitsStayFinite) {
  const std::vector<float> logits{1000.0f, -1000.0f, 0.0f};
  const std::int32_t target = 1;
  const Tolerance tol = tolerance_for(DType::f32, "crossentropy", Check::known_value);
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    float loss = 0;
    std::vector<float> probs(3);
    kernels_for(backend).crossentropy_forward(&loss, probs.data(), logits.data(), &target, 1, 3);
    EXPECT_NEAR(loss, 2000.0, allowed_error(2000.0, tol)) << to_string(backend);
    EXPECT_EQ(probs[0], 1.0f) << to_string(backend);
  }
}

TEST(CrossentropyKernels, TargetOutsideVocabularyIsAnError) {
  const std::vector<float> logits{1, 2, 3};
  const std::int32_t target = 3;
  float loss = 0;
  std::vector<float> probs(3);
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    EXPECT_THROW(kernels_for(backend).crossentropy_forward(&loss, probs.data(), logits.data(),
                                                           &target, 1, 3),
                 sb::Error);
  }
}

TEST(GeluKernels, MatchesKnownValues) {
  // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) at x = -1, 0, 1, 2, 10.
  const std::vector<float> x{-1.0f, 0.0f, 1.0f, 2.0f, 10.0f};
  const std::vector<double> expected{-0.15880800939172324, 0.0, 0.8411919906082768,
                                     1.954597694087775, 10.0};
  const Tolerance tol = tolerance_for(DType::f32, "gelu", Check::known_value);
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    std::vector<float> y(x.size());
    kernels_for(backend).gelu_forward(y.data(), x.data(), static_cast<i64>(x.size()));
    for (std::size_t i = 0; i < x.size(); ++i)
      EXPECT_NEAR(y[i], expected[i], allowed_error(expected[i], tol))
          << to_string(backend) << " x=" << x[i];
  }
}

}  // namespace
}  // namespace sb::kernels::testing
