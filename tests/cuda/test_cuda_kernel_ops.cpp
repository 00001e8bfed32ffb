// SPDX-License-Identifier: Apache-2.0
// Every differentiable kernel pair of the cuda back-end against reference<float>, from the op
// descriptions the cpu tests use, plus repeatability and contract details. Leaves out
// finite differences (the reference's own tests) and speed (bench/).
#include <gtest/gtest.h>

#include <cmath>

#include "../kernels/cnn_op_descriptions.hpp"
#include "../kernels/kernel_op_descriptions.hpp"
#include "cuda_test_support.hpp"

namespace sb::kernels::testing {
namespace {

template <class Op>
class CudaKernelOpTest : public CudaTest {};

using CudaKernelOps = ::testing::Types<MatmulOp, EmbeddingOp, LayernormOp, AttentionOp, GeluOp,
                                       ResidualOp, CrossentropyOp, EmbeddingShardOp, CrossentropyShardOp,
                                       Conv2dOp, Batchnorm2dOp, ReluOp, GlobalAvgpoolOp>;

struct OpNames {
  template <class Op>
  static std::string GetName(int) {
    return Op::name;
  }
};

TYPED_TEST_SUITE(CudaKernelOpTest, CudaKernelOps, OpNames);

TYPED_TEST(CudaKernelOpTest, CudaMatchesReference) {
  for (const TypeParam& op : TypeParam::backend_cases())
    report(cuda_mismatches(op, cuda_kernels(), ReferenceTable<float>{}), "cuda " + op.label());
}

TYPED_TEST(CudaKernelOpTest, CudaRepeatsBitForBit) {
  for (const TypeParam& op : TypeParam::backend_cases())
    report(cuda_repeat_mismatches(op, cuda_kernels()), "cuda " + op.label());
}

// GPT-2 small widths (C=768, 12 heads, vocabulary 50304), where every block is full and rows
// span many strides of a block. Matmul is left out: at K=768 float sums in another order
// differ by more than the table's absolute 1e-5 near zero (cuBLAS and OpenBLAS alike).
using SizedOps = ::testing::Types<LayernormOp, AttentionOp, CrossentropyOp>;
template <class Op>
class CudaKernelAtScaleTest : public CudaTest {};
TYPED_TEST_SUITE(CudaKernelAtScaleTest, SizedOps, OpNames);

template <class Op>
Op gpt2_small_case();
template <> LayernormOp gpt2_small_case<LayernormOp>() { return {4 * 256, 768}; }
template <> AttentionOp gpt2_small_case<AttentionOp>() { return {2, 256, 768, 12}; }
template <> CrossentropyOp gpt2_small_case<CrossentropyOp>() { return {128, 50304}; }

TYPED_TEST(CudaKernelAtScaleTest, CudaMatchesReference) {
  const TypeParam op = gpt2_small_case<TypeParam>();
  report(cuda_mismatches(op, cuda_kernels(), ReferenceTable<float>{}), "cuda " + op.label());
}

// ---- the comparison can fail -------------------------------------------------------------------

void overwriting_gelu_backward(float* dinp, const float* inp, const float* dout, i64 N) {
  SB_CUDA_CHECK(cudaMemset(dinp, 0, static_cast<std::size_t>(N) * sizeof(float)));
  cuda::gelu_backward(dinp, inp, dout, N);
}

class CudaKernelChecks : public CudaTest {};

TEST_F(CudaKernelChecks, CatchOverwrittenGradients) {
  KernelTable wrong = cuda_kernels();
  wrong.gelu_backward = &overwriting_gelu_backward;
  const auto mismatches = cuda_mismatches(GeluOp{45}, wrong, ReferenceTable<float>{});
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0].tensor, "dinp");
}

// ---- contract details ----------------------------------------------------------------------------

TEST_F(CudaKernelChecks, AttentionProbabilitiesAreCausalAndRowsSumToOne) {
  const AttentionOp op{2, 37, 12, 3};
  const Tolerance tol = tolerance_for(DType::f32, "attention", Check::backend_forward);
  const OpState<float> start = make_state<float>(op, 5, 0.0);
  OpState<float> s = start;
  OpState<OnDevice> device(start);
  op.forward(cuda_kernels(), device);
  device.download_values(s);
  const std::vector<float>& att = s.values["att"];
  for (i64 row = 0; row < op.B * op.NH * op.T; ++row) {
    const i64 t = row % op.T;
    double sum = 0;
    for (i64 t2 = 0; t2 < op.T; ++t2) {
      const float p = att[row * op.T + t2];
      if (t2 > t) ASSERT_EQ(p, 0.0f) << "row " << row << " col " << t2;
      sum += p;
    }
    ASSERT_NEAR(sum, 1.0, allowed_error(1.0, tol)) << "row " << row;
  }
}

TEST_F(CudaKernelChecks, CrossentropyHugeLogitsStayFinite) {
  const cuda::DeviceBuffer<float> logits(std::vector<float>{1000.0f, -1000.0f, 0.0f});
  const cuda::DeviceBuffer<std::int32_t> target(std::vector<std::int32_t>{1});
  cuda::DeviceBuffer<float> loss(1), probs(3);
  cuda::crossentropy_forward(loss.data(), probs.data(), logits.data(), target.data(), 1, 3);
  const Tolerance tol = tolerance_for(DType::f32, "crossentropy", Check::known_value);
  EXPECT_NEAR(loss.to_host()[0], 2000.0, allowed_error(2000.0, tol));
  EXPECT_EQ(probs.to_host()[0], 1.0f);
}

TEST_F(CudaKernelChecks, GeluMatchesKnownValues) {
  const std::vector<float> x{-1.0f, 0.0f, 1.0f, 2.0f, 10.0f};
  const std::vector<double> expected{-0.15880800939172324, 0.0, 0.8411919906082768,
                                     1.954597694087775, 10.0};
  const Tolerance tol = tolerance_for(DType::f32, "gelu", Check::known_value);
  const cuda::DeviceBuffer<float> inp(x);
  cuda::DeviceBuffer<float> out(static_cast<i64>(x.size()));
  cuda::gelu_forward(out.data(), inp.data(), static_cast<i64>(x.size()));
  const std::vector<float> y = out.to_host();
  for (std::size_t i = 0; i < x.size(); ++i)
    EXPECT_NEAR(y[i], expected[i], allowed_error(expected[i], tol)) << "x=" << x[i];
}

TEST_F(CudaKernelChecks, BadShapesThrowBeforeLaunch) {
  EXPECT_THROW(cuda::attention_forward(nullptr, nullptr, nullptr, 1, 4, 10, 3), sb::Error);
  EXPECT_THROW(cuda::conv2d_forward(nullptr, nullptr, nullptr, nullptr, 1, 1, 2, 2, 1, 5, 5, 1, 0),
               sb::Error);
}

}  // namespace
}  // namespace sb::kernels::testing
