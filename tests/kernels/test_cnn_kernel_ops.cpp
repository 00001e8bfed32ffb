// SPDX-License-Identifier: Apache-2.0
// The convolutional-network kernels from their descriptions (cpu vs reference, gradients vs finite
// differences, repeatability), then contract details. Leaves out SGD (own file) and speed.
#include <gtest/gtest.h>

#include <cmath>

#include "cnn_op_descriptions.hpp"
#include "core/check.hpp"
#include "kernels/cpu/conv2d_im2col.hpp"

namespace sb::kernels::testing {
namespace {

template <class Op>
class CnnKernelOpTest : public ::testing::Test {};

using CnnKernelOps =
    ::testing::Types<Conv2dOp, Batchnorm2dOp, Batchnorm2dSplitOp, ReluOp, GlobalAvgpoolOp>;

struct OpNames {
  template <class Op>
  static std::string GetName(int) {
    return Op::name;
  }
};

TYPED_TEST_SUITE(CnnKernelOpTest, CnnKernelOps, OpNames);

TYPED_TEST(CnnKernelOpTest, CpuMatchesReference) {
  for (const TypeParam& op : TypeParam::backend_cases()) {
    report(backend_mismatches(op, kernels_for(Backend::cpu), kernels_for(Backend::reference)),
           op.label());
  }
}

TYPED_TEST(CnnKernelOpTest, ReferenceGradientMatchesFiniteDifferences) {
  for (const TypeParam& op : TypeParam::gradient_cases())
    report(gradient_mismatches(op, ReferenceTable<double>{}), op.label());
}

TYPED_TEST(CnnKernelOpTest, CpuRepeatsBitForBit) {
  for (const TypeParam& op : TypeParam::backend_cases())
    report(repeat_mismatches(op, kernels_for(Backend::cpu)), op.label());
}

// ---- the checks above can fail ---------------------------------------------------------------

// BatchNorm backward that treats the batch mean and rstd as constants (the eval-mode
// derivative, dx = dy weight rstd): right only if the statistics did not depend on the input.
void frozen_statistics_batchnorm2d_backward(double* dinp, double* dweight, double* dbias,
                                            const double* dout, const double* inp,
                                            const double* weight, const double* mean,
                                            const double* rstd, i64 N, i64 C, i64 HW) {
  std::vector<double> discarded(static_cast<std::size_t>(N * C * HW));
  reference::batchnorm2d_backward<double>(discarded.data(), dweight, dbias, dout, inp, weight,
                                          mean, rstd, N, C, HW);
  for (i64 n = 0; n < N; ++n)
    for (i64 c = 0; c < C; ++c)
      for (i64 i = 0; i < HW; ++i) {
        const i64 index = (n * C + c) * HW + i;
        dinp[index] += dout[index] * weight[c] * rstd[c];
      }
}

TEST(CnnKernelOpChecks, FiniteDifferencesCatchBatchnormWithFrozenStatistics) {
  ReferenceTable<double> wrong;
  wrong.batchnorm2d_backward = &frozen_statistics_batchnorm2d_backward;
  const Batchnorm2dOp op = Batchnorm2dOp::gradient_cases().front();
  const auto mismatches = gradient_mismatches(op, wrong);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0].tensor, "dinp");
  EXPECT_GT(mismatches[0].failed, op.N * op.C * op.HW / 2);
}

// conv2d forward with one output off by 1e-3 (as a missed edge tap would leave it): the
// backend check must notice that single element.
void one_output_off_conv2d_forward(float* out, const float* inp, const float* weight,
                                   const float* bias, i64 N, i64 C, i64 H, i64 W, i64 OC, i64 KH,
                                   i64 KW, i64 stride, i64 pad) {
  cpu::conv2d_forward(out, inp, weight, bias, N, C, H, W, OC, KH, KW, stride, pad);
  out[(W + 2 * pad - KW) / stride] += 1e-3f;  // the last output of the first row
}

TEST(CnnKernelOpChecks, BackendCheckCatchesOneWrongOutput) {
  KernelTable wrong = kernels_for(Backend::cpu);
  wrong.conv2d_forward = &one_output_off_conv2d_forward;
  const auto mismatches = backend_mismatches(Conv2dOp{3, 5, 11, 9, 7, 3, 3, 2, 1}, wrong,
                                             kernels_for(Backend::reference));
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0].tensor, "out");
  EXPECT_EQ(mismatches[0].failed, 1);
}

// ---- contract details the generic checks do not pin down ---------------------------------------

// The cpu conv2d takes its shifted-plane path for stride 1 on AVX2 CPUs: the im2col + BLAS
// paths it keeps for the other convolutions and CPUs are checked on every case here.
TEST(Conv2dKernels, Im2colPathsMatchTheReference) {
  KernelTable im2col = kernels_for(Backend::cpu);
  im2col.conv2d_forward = &cpu::conv2d_forward_im2col;
  im2col.conv2d_backward = &cpu::conv2d_backward_im2col;
  for (const Conv2dOp& op : Conv2dOp::backend_cases())
    report(backend_mismatches(op, im2col, kernels_for(Backend::reference)), op.label());
}

// Cross-correlation (no kernel flip), zero padding, stride applied from the top-left corner.
// inp (1,1,3,3) = 1..9, weight (1,1,2,2) = [[1,0],[0,-1]], bias 0.5, stride 2, pad 1:
// out[y,x] = x[2y-1, 2x-1] - x[2y, 2x] + 0.5 -> [[0-1, 0-3], [0-7, 5-9]] + 0.5.
TEST(Conv2dKernels, MatchesAHandWorkedExample) {
  const std::vector<float> inp{1, 2, 3, 4, 5, 6, 7, 8, 9}, weight{1, 0, 0, -1}, bias{0.5f};
  const std::vector<float> expected{-0.5f, -2.5f, -6.5f, -3.5f};
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    std::vector<float> out(4);
    kernels_for(backend).conv2d_forward(out.data(), inp.data(), weight.data(), bias.data(), 1, 1,
                                        3, 3, 1, 2, 2, 2, 1);
    EXPECT_EQ(out, expected) << to_string(backend);
  }
}

// dinp = nullptr skips only dinp: dweight and dbias are those of the full backward.
TEST(Conv2dKernels, NullDinpLeavesTheOtherGradientsAlone) {
  const Conv2dOp full{3, 5, 11, 9, 7, 3, 3, 2, 1};
  Conv2dOp skipped = full;
  skipped.with_dinp = false;
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    OpState<float> a = make_state<float>(full, 3, 1.0), b = a;
    full.forward(kernels_for(backend), a);
    full.backward(kernels_for(backend), a);
    skipped.forward(kernels_for(backend), b);
    skipped.backward(kernels_for(backend), b);
    EXPECT_EQ(a.grads["weight"], b.grads["weight"]) << to_string(backend);
    EXPECT_EQ(a.grads["bias"], b.grads["bias"]) << to_string(backend);
    EXPECT_EQ(make_state<float>(full, 3, 1.0).grads["inp"], b.grads["inp"]) << to_string(backend);
    EXPECT_NE(a.grads["inp"], b.grads["inp"]) << to_string(backend);
  }
}

TEST(Conv2dKernels, KernelLargerThanPaddedInputIsAnError) {
  std::vector<float> buffer(64);
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    const KernelTable& k = kernels_for(backend);
    EXPECT_THROW(k.conv2d_forward(buffer.data(), buffer.data(), buffer.data(), nullptr, 1, 1, 2, 2,
                                  1, 5, 5, 1, 1),
                 sb::Error)
        << to_string(backend);
    EXPECT_THROW(k.conv2d_forward(buffer.data(), buffer.data(), buffer.data(), nullptr, 1, 1, 3, 3,
                                  1, 3, 3, 0, 1),
                 sb::Error)
        << to_string(backend);
  }
}

// Two channels of four values each, NCHW (N=2, C=2, HW=2):
//   channel 0: 1, 2 | 3, 6   mean 3, biased var 14/4 = 3.5, unbiased 14/3
//   channel 1: 0,-4 | 4, 8   mean 2, biased var 80/4 = 20,  unbiased 80/3
// momentum 0.1: running = 0.9 running + 0.1 batch statistic (unbiased variance).
TEST(Batchnorm2dKernels, TrainingUpdatesRunningStatisticsAsPyTorch) {
  const std::vector<float> inp{1, 2, 0, -4, 3, 6, 4, 8}, weight{2.0f, 0.5f}, bias{-1.0f, 3.0f};
  const double eps = 1e-5, batch_mean[2] = {3.0, 2.0}, biased_var[2] = {3.5, 20.0};
  const double expected_running_mean[2] = {0.9 * 0.5 + 0.1 * 3.0, 0.9 * -1.0 + 0.1 * 2.0};
  const double expected_running_var[2] = {0.9 * 2.0 + 0.1 * 14.0 / 3.0,
                                          0.9 * 1.0 + 0.1 * 80.0 / 3.0};
  const Tolerance tol = tolerance_for(DType::f32, "batchnorm2d", Check::known_value);
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    std::vector<float> out(8), mean(2), rstd(2), running_mean{0.5f, -1.0f}, running_var{2.0f, 1.0f};
    kernels_for(backend).batchnorm2d_forward_train(out.data(), mean.data(), rstd.data(),
                                                   running_mean.data(), running_var.data(),
                                                   inp.data(), weight.data(), bias.data(), 2, 2, 2,
                                                   0.1, eps);
    for (int c = 0; c < 2; ++c) {
      const double s = 1.0 / std::sqrt(biased_var[c] + eps);
      EXPECT_NEAR(mean[c], batch_mean[c], allowed_error(batch_mean[c], tol)) << to_string(backend);
      EXPECT_NEAR(rstd[c], s, allowed_error(s, tol)) << to_string(backend);
      EXPECT_NEAR(running_mean[c], expected_running_mean[c],
                  allowed_error(expected_running_mean[c], tol)) << to_string(backend) << " c=" << c;
      EXPECT_NEAR(running_var[c], expected_running_var[c],
                  allowed_error(expected_running_var[c], tol)) << to_string(backend) << " c=" << c;
      for (int n = 0; n < 2; ++n)
        for (int i = 0; i < 2; ++i) {
          const int index = (n * 2 + c) * 2 + i;
          const double y = (inp[index] - batch_mean[c]) * s * weight[c] + bias[c];
          EXPECT_NEAR(out[index], y, allowed_error(y, tol)) << to_string(backend) << " " << index;
        }
    }
  }
}

TEST(Batchnorm2dKernels, TrainingNeedsTwoValuesPerChannel) {
  std::vector<float> buffer(8, 1.0f);
  float* b = buffer.data();
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    EXPECT_THROW(kernels_for(backend).batchnorm2d_forward_train(b, b, b, b, b, b, b, b, 1, 3, 1,
                                                                0.1, 1e-5),
                 sb::Error)
        << to_string(backend);
  }
}

// Eval mode normalises with the running statistics: by hand on one value per channel, then
// cpu against reference on an awkward size.
TEST(Batchnorm2dKernels, EvalUsesRunningStatistics) {
  const i64 N = 3, C = 5, HW = 11 * 9;
  const double eps = 1e-5;
  OpState<float> s = make_state<float>(Batchnorm2dOp{N, C, HW}, 21, 0.0);
  std::vector<float>& running_var = s.values["running_var"];
  std::vector<float>& running_mean = s.values["running_mean"];
  for (i64 c = 0; c < C; ++c) {
    running_mean[c] = 0.25f * static_cast<float>(c) - 0.5f;
    running_var[c] = 0.5f + static_cast<float>(c);
  }
  std::vector<float> out_reference(N * C * HW), out_cpu(N * C * HW);
  for (auto [backend, out] : {std::pair{Backend::reference, &out_reference},
                              std::pair{Backend::cpu, &out_cpu}}) {
    kernels_for(backend).batchnorm2d_forward_eval(out->data(), s["inp"], s["weight"], s["bias"],
                                                  running_mean.data(), running_var.data(), N, C,
                                                  HW, eps);
  }
  const Tolerance tol = tolerance_for(DType::f32, "batchnorm2d", Check::known_value);
  for (i64 c = 0; c < C; ++c) {
    const i64 index = (2 * C + c) * HW + 7;  // image 2, position 7
    const double y = (s["inp"][index] - running_mean[c]) / std::sqrt(running_var[c] + eps) *
                         s["weight"][c] + s["bias"][c];
    EXPECT_NEAR(out_reference[index], y, allowed_error(y, tol)) << "c=" << c;
  }
  report(compare("out", out_cpu, out_reference,
                 tolerance_for(DType::f32, "batchnorm2d", Check::backend_forward)),
         "batchnorm2d eval");
}

// relu_backward reads the forward OUTPUT, so the forward may overwrite its input; the
// gradient at exactly 0 is 0 (PyTorch).
TEST(ReluKernels, InPlaceForwardThenBackwardFromTheOutput) {
  const std::vector<float> x{-2.0f, -0.0f, 0.0f, 1e-30f, 3.0f};
  const std::vector<float> expected_out{0.0f, 0.0f, 0.0f, 1e-30f, 3.0f};
  const std::vector<float> dout{10.0f, 20.0f, 30.0f, 40.0f, 50.0f};
  const std::vector<float> expected_dinp{1.0f, 1.0f, 1.0f, 41.0f, 51.0f};
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    std::vector<float> activations = x, dinp(x.size(), 1.0f);
    const KernelTable& k = kernels_for(backend);
    k.relu_forward(activations.data(), activations.data(), 5);
    EXPECT_EQ(activations, expected_out) << to_string(backend);
    k.relu_backward(dinp.data(), activations.data(), dout.data(), 5);
    EXPECT_EQ(dinp, expected_dinp) << to_string(backend);
  }
}

TEST(GlobalAvgpoolKernels, MeanOverPositionsOfEachImageAndChannel) {
  // (N=2, C=2, HW=3): rows 1..3, 4..6, 7..9, 10..12 -> means 2, 5, 8, 11.
  std::vector<float> inp(12);
  for (int i = 0; i < 12; ++i) inp[i] = static_cast<float>(i + 1);
  const std::vector<float> expected{2.0f, 5.0f, 8.0f, 11.0f};
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    std::vector<float> out(4), dinp(12, 1.0f);
    const KernelTable& k = kernels_for(backend);
    k.global_avgpool_forward(out.data(), inp.data(), 2, 2, 3);
    EXPECT_EQ(out, expected) << to_string(backend);
    const std::vector<float> dout{3.0f, 6.0f, -3.0f, 0.0f};
    k.global_avgpool_backward(dinp.data(), dout.data(), 2, 2, 3);
    EXPECT_EQ(dinp, (std::vector<float>{2, 2, 2, 3, 3, 3, 0, 0, 0, 1, 1, 1})) << to_string(backend);
  }
}

}  // namespace
}  // namespace sb::kernels::testing
