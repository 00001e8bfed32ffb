// SPDX-License-Identifier: Apache-2.0
// sgd_update against a two-step example worked by hand and cpu against reference over five
// steps. Leaves out learning-rate schedules and parameter groups (src/optim).
#include <gtest/gtest.h>

#include <vector>

#include "core/check.hpp"
#include "core/rng.hpp"
#include "op_test_harness.hpp"

namespace sb::kernels::testing {
namespace {

// lr 0.1, momentum 0.9, weight decay 0.01.
// Element 0: p = 1, g = 0.5 then -0.25.
//  step 1: g = 0.5 + 0.01 = 0.51; buf = g = 0.51 (whatever it held); p = 1 - 0.051 = 0.949
//  step 2: g = -0.25 + 0.00949 = -0.24051; buf = 0.459 - 0.24051 = 0.21849;
//          p = 0.949 - 0.021849 = 0.927151
// Element 1: p = -2, g = 0 then 3.
//  step 1: g = -0.02; buf = -0.02; p = -2 + 0.002 = -1.998
//  step 2: g = 3 - 0.01998 = 2.98002; buf = -0.018 + 2.98002 = 2.96202;
//          p = -1.998 - 0.296202 = -2.294202
constexpr double kLr = 0.1, kMomentum = 0.9, kWeightDecay = 0.01;
constexpr double kGradients[2][2] = {{0.5, 0.0}, {-0.25, 3.0}};  // [step][element]
constexpr double kExpectedParams[2][2] = {{0.949, -1.998}, {0.927151, -2.294202}};
constexpr double kExpectedBuffer[2][2] = {{0.51, -0.02}, {0.21849, 2.96202}};

template <class T, class Update>
void expect_hand_example(Update update, const char* backend) {
  const Tolerance tol = tolerance_for(dtype_of<T>(), "sgd", Check::known_value);
  std::vector<T> params{1.0, -2.0};
  std::vector<T> buf{100.0, -100.0};  // stale contents: step 1 must not read them
  for (int step = 1; step <= 2; ++step) {
    const std::vector<T> grads{static_cast<T>(kGradients[step - 1][0]),
                               static_cast<T>(kGradients[step - 1][1])};
    update(params.data(), grads.data(), buf.data(), 2, kLr, kMomentum, kWeightDecay, step);
    for (int i = 0; i < 2; ++i) {
      const double p = kExpectedParams[step - 1][i], b = kExpectedBuffer[step - 1][i];
      EXPECT_NEAR(params[i], p, allowed_error(p, tol)) << backend << " step " << step << " p" << i;
      EXPECT_NEAR(buf[i], b, allowed_error(b, tol)) << backend << " step " << step << " buf" << i;
    }
  }
}

TEST(SgdUpdate, MatchesTwoStepsWorkedByHand) {
  expect_hand_example<double>(&reference::sgd_update<double>, "reference<double>");
  expect_hand_example<float>(&reference::sgd_update<float>, "reference<float>");
  expect_hand_example<float>(&cpu::sgd_update, "cpu");
}

TEST(SgdUpdate, CpuMatchesReferenceOverFiveSteps) {
  const i64 n = 3 * 8192 + 45;  // several chunks, the last one partial
  const CounterRng rng(12, 0);
  std::vector<float> p_ref(n), buf_ref(n, 0), grads(n);
  for (i64 i = 0; i < n; ++i) p_ref[i] = static_cast<float>(rng.normal(i));
  std::vector<float> p_cpu = p_ref, buf_cpu = buf_ref;
  for (int step = 1; step <= 5; ++step) {
    for (i64 i = 0; i < n; ++i) grads[i] = static_cast<float>(rng.normal(step * n + i));
    reference::sgd_update<float>(p_ref.data(), grads.data(), buf_ref.data(), n, 0.05, 0.9, 5e-4,
                                 step);
    cpu::sgd_update(p_cpu.data(), grads.data(), buf_cpu.data(), n, 0.05, 0.9, 5e-4, step);
  }
  const Tolerance tol = tolerance_for(DType::f32, "sgd", Check::backend_forward);
  report(compare("params", p_cpu, p_ref, tol), "sgd");
  report(compare("momentum_buffer", buf_cpu, buf_ref, tol), "sgd");
}

TEST(SgdUpdate, StepZeroIsAnError) {
  float p = 1, g = 1, buf = 0;
  EXPECT_THROW(cpu::sgd_update(&p, &g, &buf, 1, 0.1, 0.9, 0.0, 0), sb::Error);
  EXPECT_THROW(reference::sgd_update<float>(&p, &g, &buf, 1, 0.1, 0.9, 0.0, 0), sb::Error);
}

}  // namespace
}  // namespace sb::kernels::testing
