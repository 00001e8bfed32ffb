// SPDX-License-Identifier: Apache-2.0
// adamw_update against a two-step example worked by hand and cpu against reference;
// squared_norm and scale_inplace. Leaves out schedules and clipping policy (src/optim).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/rng.hpp"
#include "op_test_harness.hpp"

namespace sb::kernels::testing {
namespace {

// lr 0.1, betas (0.9, 0.999), eps 1e-8, weight decay 0.1 (decay factor 1 - lr wd = 0.99).
struct AdamwHyper {
  double lr = 0.1, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.1;
};

// Element 0: p = 1, g = 0.5 then -0.25.
//  step 1: p = 0.99; m = 0.05; v = 0.001 * 0.25 = 2.5e-4; m^ = 0.05 / 0.1 = 0.5;
//          v^ = 2.5e-4 / 0.001 = 0.25; p = 0.99 - 0.1 * 0.5 / (0.5 + 1e-8) = 0.890000002
//  step 2: p = 0.890000002 * 0.99 = 0.88110000198; m = 0.045 - 0.025 = 0.02;
//          v = 0.999 * 2.5e-4 + 0.001 * 0.0625 = 3.1225e-4; m^ = 0.02 / 0.19 = 0.10526315789;
//          v^ = 3.1225e-4 / 0.001999 = 0.15620310155, sqrt = 0.39522538;
//          p = 0.88110000198 - 0.1 * 0.10526315789 / 0.39522538 = 0.85446629869
// Element 1: p = -2, g = 0 then 3.
//  step 1: m = v = 0, so only the decay acts: p = -1.98
//  step 2: p = -1.9602; m = 0.3; v = 0.009; m^ = 1.5789473684; v^ = 4.5022511256,
//          sqrt = 2.1218508772; p = -1.9602 - 0.1 * 0.7441368201 = -2.03461368201
constexpr double kExpectedAfterStep1[] = {0.8900000019999999600, -1.98};
constexpr double kExpectedAfterStep2[] = {0.8544662986878461630, -2.0346136820059969817};
constexpr double kGradients[2][2] = {{0.5, 0.0}, {-0.25, 3.0}};  // [step][element]

template <class T, class Update>
void expect_hand_example(Update update, const char* backend) {
  const Tolerance tol = tolerance_for(dtype_of<T>(), "adamw", Check::known_value);
  const AdamwHyper hp;
  std::vector<T> params{1.0, -2.0}, m(2, 0), v(2, 0);
  for (int step = 1; step <= 2; ++step) {
    const std::vector<T> grads{static_cast<T>(kGradients[step - 1][0]),
                               static_cast<T>(kGradients[step - 1][1])};
    update(params.data(), grads.data(), m.data(), v.data(), 2, hp.lr, hp.beta1, hp.beta2, hp.eps,
           hp.weight_decay, step);
    const double* expected = step == 1 ? kExpectedAfterStep1 : kExpectedAfterStep2;
    for (int i = 0; i < 2; ++i) {
      EXPECT_NEAR(params[i], expected[i], allowed_error(expected[i], tol))
          << backend << " step " << step << " element " << i;
    }
  }
  EXPECT_NEAR(m[0], 0.02, allowed_error(0.02, tol)) << backend;
  EXPECT_NEAR(v[1], 0.009, allowed_error(0.009, tol)) << backend;
}

TEST(AdamwUpdate, MatchesTwoStepsWorkedByHand) {
  expect_hand_example<double>(&reference::adamw_update<double>, "reference<double>");
  expect_hand_example<float>(&reference::adamw_update<float>, "reference<float>");
  expect_hand_example<float>(&cpu::adamw_update, "cpu");
}

TEST(AdamwUpdate, CpuMatchesReferenceOverManySteps) {
  const i64 n = 3 * 8192 + 45;  // several chunks, the last one partial
  const CounterRng rng(11, 0);
  std::vector<float> p_ref(n), m_ref(n, 0), v_ref(n, 0), grads(n);
  for (i64 i = 0; i < n; ++i) p_ref[i] = static_cast<float>(rng.normal(i));
  std::vector<float> p_cpu = p_ref, m_cpu = m_ref, v_cpu = v_ref;
  for (int step = 1; step <= 5; ++step) {
    for (i64 i = 0; i < n; ++i) grads[i] = static_cast<float>(rng.normal(step * n + i));
    reference::adamw_update<float>(p_ref.data(), grads.data(), m_ref.data(), v_ref.data(), n, 1e-3,
                                   0.9, 0.95, 1e-8, 0.1, step);
    cpu::adamw_update(p_cpu.data(), grads.data(), m_cpu.data(), v_cpu.data(), n, 1e-3, 0.9, 0.95,
                      1e-8, 0.1, step);
  }
  const Tolerance tol = tolerance_for(DType::f32, "adamw", Check::backend_forward);
  report(compare("params", p_cpu, p_ref, tol), "adamw");
  report(compare("m", m_cpu, m_ref, tol), "adamw");
  report(compare("v", v_cpu, v_ref, tol), "adamw");
}

TEST(AdamwUpdate, StepZeroIsAnError) {
  float p = 1, g = 1, m = 0, v = 0;
  EXPECT_THROW(cpu::adamw_update(&p, &g, &m, &v, 1, 0.1, 0.9, 0.999, 1e-8, 0.0, 0), sb::Error);
  EXPECT_THROW(reference::adamw_update<float>(&p, &g, &m, &v, 1, 0.1, 0.9, 0.999, 1e-8, 0.0, 0),
               sb::Error);
}

TEST(SquaredNorm, SumsSquaresInDouble) {
  // 1..n squared sums to n(n+1)(2n+1)/6, exact in double; a float sum would be off.
  const i64 n = 20001;
  std::vector<float> x(n);
  for (i64 i = 0; i < n; ++i) x[i] = static_cast<float>(i + 1);
  const double expected = static_cast<double>(n) * (n + 1) * (2 * n + 1) / 6;
  EXPECT_EQ(reference::squared_norm<float>(x.data(), n), expected);
  EXPECT_EQ(cpu::squared_norm(x.data(), n), expected);
  EXPECT_EQ(cpu::squared_norm(x.data(), 0), 0.0);
  EXPECT_EQ(cpu::squared_norm(x.data(), 1), 1.0);
}

TEST(SquaredNorm, CpuMatchesReferenceOnRandomData) {
  const i64 n = 5 * 8192 + 37;
  const CounterRng rng(3, 1);
  std::vector<float> x(n);
  for (i64 i = 0; i < n; ++i) x[i] = static_cast<float>(rng.normal(i));
  const double expected = reference::squared_norm<float>(x.data(), n);
  const Tolerance tol = tolerance_for(DType::f64, "squared_norm", Check::known_value);
  EXPECT_NEAR(cpu::squared_norm(x.data(), n), expected, allowed_error(expected, tol));
}

TEST(ScaleInplace, ScalesEveryElement) {
  const i64 n = 2 * 8192 + 3;
  std::vector<float> ref(n), fast(n);
  for (i64 i = 0; i < n; ++i) ref[i] = fast[i] = static_cast<float>(i % 97) - 48.0f;
  reference::scale_inplace<float>(ref.data(), n, 0.3);
  cpu::scale_inplace(fast.data(), n, 0.3);
  for (i64 i = 0; i < n; ++i) {
    ASSERT_EQ(fast[i], ref[i]) << i;
    ASSERT_EQ(ref[i], static_cast<float>((static_cast<float>(i % 97) - 48.0f) * 0.3)) << i;
  }
}

}  // namespace
}  // namespace sb::kernels::testing
