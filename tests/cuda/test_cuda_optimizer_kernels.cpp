// SPDX-License-Identifier: Apache-2.0
// The cuda kernels without a backward: AdamW, SGD, squared norm, scaling and eval-mode
// BatchNorm, against reference<float> and known values. Leaves out schedules (src/optim).
#include <gtest/gtest.h>

#include <vector>

#include "core/rng.hpp"
#include "cuda_test_support.hpp"

namespace sb::kernels::testing {
namespace {

class CudaOptimizerKernels : public CudaTest {};

std::vector<float> normal_vector(i64 n, std::uint64_t seed, std::uint64_t stream, double scale = 1.0) {
  const CounterRng rng(seed, stream);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<float>(scale * rng.normal(i));
  return v;
}

TEST_F(CudaOptimizerKernels, AdamwMatchesReferenceOverFiveSteps) {
  const i64 n = 3 * 8192 + 45;  // several blocks, the last one partial
  std::vector<float> p_ref = normal_vector(n, 11, 0), m_ref(n, 0), v_ref(n, 0);
  cuda::DeviceBuffer<float> p(p_ref), m(m_ref), v(v_ref);
  for (int step = 1; step <= 5; ++step) {
    const std::vector<float> grads = normal_vector(n, 11, static_cast<std::uint64_t>(step));
    const cuda::DeviceBuffer<float> g(grads);
    reference::adamw_update<float>(p_ref.data(), grads.data(), m_ref.data(), v_ref.data(), n, 1e-3,
                                   0.9, 0.95, 1e-8, 0.1, step);
    cuda::adamw_update(p.data(), g.data(), m.data(), v.data(), n, 1e-3, 0.9, 0.95, 1e-8, 0.1, step);
  }
  const Tolerance tol = tolerance_for(DType::f32, "adamw", Check::backend_forward);
  report(compare("params", p.to_host(), p_ref, tol), "cuda adamw");
  report(compare("m", m.to_host(), m_ref, tol), "cuda adamw");
  report(compare("v", v.to_host(), v_ref, tol), "cuda adamw");
}

TEST_F(CudaOptimizerKernels, SgdMatchesReferenceOverFiveSteps) {
  const i64 n = 3 * 8192 + 45;
  std::vector<float> p_ref = normal_vector(n, 12, 0), buf_ref(n, 7.0f);  // stale buffer
  cuda::DeviceBuffer<float> p(p_ref), buf(buf_ref);
  for (int step = 1; step <= 5; ++step) {
    const std::vector<float> grads = normal_vector(n, 12, static_cast<std::uint64_t>(step));
    const cuda::DeviceBuffer<float> g(grads);
    reference::sgd_update<float>(p_ref.data(), grads.data(), buf_ref.data(), n, 0.05, 0.9, 5e-4, step);
    cuda::sgd_update(p.data(), g.data(), buf.data(), n, 0.05, 0.9, 5e-4, step);
  }
  const Tolerance tol = tolerance_for(DType::f32, "sgd", Check::backend_forward);
  report(compare("params", p.to_host(), p_ref, tol), "cuda sgd");
  report(compare("momentum_buffer", buf.to_host(), buf_ref, tol), "cuda sgd");
}

TEST_F(CudaOptimizerKernels, StepZeroIsAnError) {
  EXPECT_THROW(cuda::adamw_update(nullptr, nullptr, nullptr, nullptr, 1, 0.1, 0.9, 0.999, 1e-8, 0.0, 0),
               sb::Error);
  EXPECT_THROW(cuda::sgd_update(nullptr, nullptr, nullptr, 1, 0.1, 0.9, 0.0, 0), sb::Error);
}

TEST_F(CudaOptimizerKernels, SquaredNormSumsSquaresInDouble) {
  // 1..n squared sums to n(n+1)(2n+1)/6, exact in double; a float sum would be off.
  const i64 n = 20001;
  std::vector<float> x(n);
  for (i64 i = 0; i < n; ++i) x[i] = static_cast<float>(i + 1);
  const cuda::DeviceBuffer<float> device_x(x);
  EXPECT_EQ(cuda::squared_norm(device_x.data(), n), static_cast<double>(n) * (n + 1) * (2 * n + 1) / 6);
  EXPECT_EQ(cuda::squared_norm(device_x.data(), 0), 0.0);
  EXPECT_EQ(cuda::squared_norm(device_x.data(), 1), 1.0);
}

TEST_F(CudaOptimizerKernels, SquaredNormMatchesReferenceAndRepeats) {
  const i64 n = 5 * 1024 * 1024 + 37;  // more elements than the grid has threads
  const std::vector<float> x = normal_vector(n, 3, 1);
  const cuda::DeviceBuffer<float> device_x(x);
  const double expected = reference::squared_norm<float>(x.data(), n);
  // Both sides add exact squares (a float squared fits a double) in double, in different
  // orders: left to right (error <= (n-1) 2^-53 sum, all terms positive) against per-thread
  // strides and two trees (far fewer roundings). n 2^-52 bounds the difference of the two
  // (1.2e-9 here; the table's 1e-13 is for a few dozen roundings, not 5e6), and still
  // catches a float accumulation (2^-24 per addition).
  const double rtol = static_cast<double>(n) * 0x1p-52;
  const double first = cuda::squared_norm(device_x.data(), n);
  EXPECT_NEAR(first, expected, rtol * expected);
  EXPECT_EQ(cuda::squared_norm(device_x.data(), n), first);
}

TEST_F(CudaOptimizerKernels, ScaleInplaceMatchesReferenceExactly) {
  const i64 n = 2 * 8192 + 3;
  std::vector<float> ref(n);
  for (i64 i = 0; i < n; ++i) ref[i] = static_cast<float>(i % 97) - 48.0f;
  cuda::DeviceBuffer<float> x(ref);
  reference::scale_inplace<float>(ref.data(), n, 0.3);
  cuda::scale_inplace(x.data(), n, 0.3);
  report(compare("x", x.to_host(), ref, {0, 0}), "cuda scale_inplace");
}

TEST_F(CudaOptimizerKernels, BatchnormEvalMatchesReference) {
  const i64 N = 3, C = 5, HW = 11 * 9;
  const std::vector<float> inp = normal_vector(N * C * HW, 21, 0), weight = normal_vector(C, 21, 1),
                           bias = normal_vector(C, 21, 2), running_mean = normal_vector(C, 21, 3);
  std::vector<float> running_var = normal_vector(C, 21, 4);
  for (float& v : running_var) v = v * v + 0.1f;
  std::vector<float> expected(static_cast<std::size_t>(N * C * HW));
  reference::batchnorm2d_forward_eval<float>(expected.data(), inp.data(), weight.data(), bias.data(),
                                             running_mean.data(), running_var.data(), N, C, HW, 1e-5);
  const cuda::DeviceBuffer<float> d_inp(inp), d_weight(weight), d_bias(bias), d_mean(running_mean),
      d_var(running_var);
  cuda::DeviceBuffer<float> out(N * C * HW);
  cuda::batchnorm2d_forward_eval(out.data(), d_inp.data(), d_weight.data(), d_bias.data(),
                                 d_mean.data(), d_var.data(), N, C, HW, 1e-5);
  const Tolerance tol = tolerance_for(DType::f32, "batchnorm2d", Check::backend_forward);
  report(compare("out", out.to_host(), expected, tol), "cuda batchnorm2d eval");
}

}  // namespace
}  // namespace sb::kernels::testing
