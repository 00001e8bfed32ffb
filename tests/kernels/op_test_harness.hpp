// SPDX-License-Identifier: Apache-2.0
// Runs one op description (ggml test-backend-ops style) against two backends, finite
// differences or itself, with the one tolerance table. Leaves out timing (bench/).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/rng.hpp"
#include "core/tensor.hpp"
#include "kernels/kernels.hpp"
#include "kernels/storage_kernels.hpp"

namespace sb::kernels::testing {

// ---- how an op describes itself -------------------------------------------------------------
// input: random, differentiable (finite differences perturb it);
// output: receives a random upstream gradient; the finite-difference loss is sum(w * output);
// saved: written by forward and read by backward (mean, rstd, att, probs), no gradient.
enum class Role { input, output, saved };

struct TensorSpec {
  std::string name;
  i64 size;
  Role role;
  double init_scale = 1.0;  // inputs are N(0, init_scale^2)
};

// Integer inputs (tokens, targets), uniform in [0, bound).
struct IndexSpec {
  std::string name;
  i64 size;
  i64 bound;
};

// Values and gradients of every tensor of one op, by name.
template <class T>
class OpState {
 public:
  std::map<std::string, std::vector<T>> values, grads;
  std::map<std::string, std::vector<std::int32_t>> indices;

  T* operator[](const std::string& name) { return values.at(name).data(); }
  T* grad(const std::string& name) { return grads.at(name).data(); }
  const std::int32_t* index(const std::string& name) { return indices.at(name).data(); }
};

// The reference backend at any precision, with the members of KernelTable, so op
// descriptions call `k.layernorm_forward(...)` whatever the table.
template <class T>
struct ReferenceTable {
#define SB_REFERENCE_MEMBER(name, DECLARE) decltype(&reference::name<T>) name = &reference::name<T>;
  SB_FOR_EACH_KERNEL(SB_REFERENCE_MEMBER)
#undef SB_REFERENCE_MEMBER
};

// ---- tolerances: the one table ----------------------------------------------------------------
// Passes when |actual - expected| <= atol + rtol |expected|. Inputs are N(0,1), so values are
// O(1) to O(sqrt(C)).
// known_value: a kernel against a value worked out by hand or in double precision.
enum class Check { backend_forward, backend_backward, finite_differences, known_value };

struct Tolerance {
  double rtol, atol;
};

struct ToleranceEntry {
  DType dtype;
  std::string_view op;  // "" = every op without its own line
  Check check;
  Tolerance tolerance;
  std::string_view reason;
};

inline constexpr ToleranceEntry kTolerances[] = {
    {DType::f32, "", Check::backend_forward, {1e-5, 1e-5},
     "float sums in another order (BLAS blocking, SIMD lanes), exp/tanh within a few ulp"},
    {DType::f32, "", Check::backend_backward, {1e-5, 1e-5}, "as forward"},
    {DType::f32, "layernorm", Check::backend_backward, {1e-4, 2e-5},
     "dinp = rstd (dnorm - mean dnorm - ...): an ulp of cancellation times rstd (316 at C=1)"},
    {DType::f32, "conv2d", Check::backend_backward, {5e-5, 2e-5},
     "dweight: N·OH·OW products (3330) cancel from O(60) to O(1), summed in float along GEMM "
     "dots of up to 8 images (720 terms)"},
    {DType::f64, "", Check::finite_differences, {1e-6, 1e-8},
     "central differences, h = 1e-6: truncation ~h^2 f''', rounding ~1e-16/h"},
    {DType::f32, "adamw", Check::backend_forward, {1e-6, 1e-7},
     "tighter: same operation order, only FMA fusion in the AVX2 build (an ulp of O(0.1))"},
    {DType::f32, "", Check::known_value, {1e-6, 1e-6}, "a few dozen float roundings"},
    // 16-bit storage, a native kernel against the reference's widen-compute-round (both with
    // 16-bit inputs, fp32 arithmetic): fp32 results a few float ulps apart round to neighbouring
    // 16-bit values (bf16: 2^-8 relative, fp16: 2^-11); fp32 outputs (parameter gradients,
    // statistics, losses) differ only in summation order.
    {DType::bf16, "", Check::backend_forward, {1e-2, 1e-3}, "one bf16 rounding apart"},
    {DType::bf16, "", Check::backend_backward, {1e-2, 1e-3}, "one bf16 rounding apart"},
    {DType::bf16, "attention", Check::backend_forward, {4e-2, 1e-2},
     "the native kernel stores the scores in bf16 before the softmax (2^-9 of a score O(3) moves "
     "a probability ~1%); the reference rounds only the probabilities"},
    {DType::bf16, "attention", Check::backend_backward, {8e-2, 2e-2},
     "as forward, and the score gradients are stored in bf16 too, then summed over T"},
    {DType::f16, "", Check::backend_forward, {2e-3, 2e-4}, "one fp16 rounding apart"},
    {DType::f16, "", Check::backend_backward, {2e-3, 2e-4}, "one fp16 rounding apart"},
    {DType::f16, "attention", Check::backend_forward, {6e-3, 2e-3}, "as bf16's, 8 times finer"},
    {DType::f16, "attention", Check::backend_backward, {1.2e-2, 4e-3}, "as bf16's, 8 times finer"},
    {DType::f64, "", Check::known_value, {1e-13, 1e-15}, "a few dozen double roundings"},
};

Tolerance tolerance_for(DType dtype, std::string_view op, Check check);

inline double allowed_error(double expected, Tolerance tol) {
  return tol.atol + tol.rtol * std::fabs(expected);
}

// ---- results -----------------------------------------------------------------------------------
// The worst element of one tensor comparison (largest error / allowed), and how many failed.
struct Mismatch {
  std::string tensor;
  i64 index = -1;
  double actual = 0, expected = 0;
  i64 failed = 0, total = 0;
};

// As compare() below, with rtol applied to scale[i] instead of |expected[i]|: for a sum whose
// terms may cancel, the magnitude of what was added.
template <class T>
std::vector<Mismatch> compare(const std::string& tensor, const std::vector<T>& actual,
                              const std::vector<T>& expected, Tolerance tol, const std::vector<double>& scale) {
  Mismatch worst{tensor};
  worst.total = static_cast<i64>(expected.size());
  double worst_ratio = 0.0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double a = actual[i], e = expected[i];
    const double error = std::fabs(a - e), allowed = tol.atol + tol.rtol * scale[i];
    if (a == e || error <= allowed) continue;  // NaN fails: every comparison with it is false
    ++worst.failed;
    const double ratio = allowed > 0 && error == error ? error / allowed : INFINITY;
    if (worst.index < 0 || ratio > worst_ratio) {
        worst_ratio = ratio;
        worst.index = static_cast<i64>(i);
        worst.actual = a;
      worst.expected = e;
    }
  }
  if (worst.failed == 0) return {};
  return {worst};
}

template <class T>
std::vector<Mismatch> compare(const std::string& tensor, const std::vector<T>& actual,
                              const std::vector<T>& expected, Tolerance tol) {
  std::vector<double> scale(expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) scale[i] = std::fabs(static_cast<double>(expected[i]));
  return compare(tensor, actual, expected, tol, scale);
}

void report(const std::vector<Mismatch>& mismatches, std::string_view what);

// A tensor of any storage type widened to double, as compare() takes it.
template <class T>
std::vector<double> as_doubles(const std::vector<T>& v) {
  std::vector<double> d(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) d[i] = widen_value(v[i]);
  return d;
}

// Fails the test with the worst element of `tensor` outside `tol`, naming the case's shape.
inline void expect_close(const std::string& tensor, const std::vector<double>& actual,
                         const std::vector<double>& expected, Tolerance tol, const std::string& shape) {
  for (const Mismatch& m : compare(tensor, actual, expected, tol))
    EXPECT_EQ(m.failed, 0) << shape << ": " << m.tensor << "[" << m.index << "] = " << m.actual << ", expected "
                           << m.expected << " (" << m.failed << " of " << m.total << " outside)";
}

// ---- state set-up -------------------------------------------------------------------------------
// Every tensor of `op` filled from a Philox stream of `seed`, so float and double states hold
// the same numbers (rounded). Gradients of inputs start at `initial_grad_scale` * N(0,1);
// outputs' gradients (the upstream w) are N(0,1); saved tensors have none.
template <class T, class Op>
OpState<T> make_state(const Op& op, std::uint64_t seed, double initial_grad_scale) {
  OpState<T> state;
  std::uint64_t stream = 0;
  auto fill = [&](std::vector<T>& v, i64 size, double scale) {
    const CounterRng rng(seed, stream++);
    v.resize(static_cast<std::size_t>(size));
    for (i64 i = 0; i < size; ++i) v[i] = static_cast<T>(scale * rng.normal(i));
  };
  for (const TensorSpec& spec : op.tensors()) {
    auto& value = state.values[spec.name];
    fill(value, spec.size, spec.role == Role::input ? spec.init_scale : 0.0);
    if (spec.role == Role::input) fill(state.grads[spec.name], spec.size, initial_grad_scale);
    if (spec.role == Role::output) fill(state.grads[spec.name], spec.size, 1.0);
  }
  for (const IndexSpec& spec : op.indices()) {
    const CounterRng rng(seed, stream++);
    auto& index = state.indices[spec.name];
    for (i64 i = 0; i < spec.size; ++i)
      index.push_back(static_cast<std::int32_t>(rng.below(i, static_cast<std::uint64_t>(spec.bound))));
  }
  return state;
}

// ---- the three checks driven by one description --------------------------------------------------
// (a) Backend `actual` against backend `expected` (both float): forward outputs and saved
// tensors, then backward from the same saved state into non-zero gradient buffers.
template <class Op, class Table>
std::vector<Mismatch> backend_mismatches(const Op& op, const Table& actual_kernels,
                                         const Table& expected_kernels) {
  OpState<float> expected = make_state<float>(op, 1234, 1.0);
  OpState<float> actual = expected;
  op.forward(expected_kernels, expected);
  op.forward(actual_kernels, actual);
  std::vector<Mismatch> mismatches;
  const Tolerance forward_tol = tolerance_for(DType::f32, Op::name, Check::backend_forward);
  for (const TensorSpec& spec : op.tensors()) {
    if (spec.role == Role::input) continue;
    for (auto& m : compare(spec.name, actual.values[spec.name], expected.values[spec.name], forward_tol))
      mismatches.push_back(m);
  }
  actual.values = expected.values;  // backward sees the same saved state on both sides
  op.backward(expected_kernels, expected);
  op.backward(actual_kernels, actual);
  const Tolerance backward_tol = tolerance_for(DType::f32, Op::name, Check::backend_backward);
  for (const TensorSpec& spec : op.tensors()) {
    if (spec.role != Role::input) continue;
    for (auto& m : compare("d" + spec.name, actual.grads[spec.name], expected.grads[spec.name],
                           backward_tol))
      mismatches.push_back(m);
  }
  return mismatches;
}

// (b) Backward of `kernels` (double) against central differences of
// L = sum over outputs of (upstream gradient * output), for every element of every input.
template <class Op, class Table>
std::vector<Mismatch> gradient_mismatches(const Op& op, const Table& kernels, double h = 1e-6) {
  OpState<double> state = make_state<double>(op, 99, 0.0);
  op.forward(kernels, state);
  op.backward(kernels, state);
  auto loss = [&](OpState<double>& probe) {
    op.forward(kernels, probe);
    double sum = 0;
    for (const TensorSpec& spec : op.tensors()) {
      if (spec.role != Role::output) continue;
      for (i64 i = 0; i < spec.size; ++i) sum += probe.grads[spec.name][i] * probe.values[spec.name][i];
    }
    return sum;
  };
  const Tolerance tol = tolerance_for(DType::f64, Op::name, Check::finite_differences);
  std::vector<Mismatch> mismatches;
  for (const TensorSpec& spec : op.tensors()) {
    if (spec.role != Role::input) continue;
    std::vector<double> numeric(static_cast<std::size_t>(spec.size));
    for (i64 i = 0; i < spec.size; ++i) {
      OpState<double> plus = state, minus = state;
      plus.values[spec.name][i] += h;
      minus.values[spec.name][i] -= h;
      numeric[i] = (loss(plus) - loss(minus)) / (2 * h);
    }
    for (auto& m : compare("d" + spec.name, state.grads[spec.name], numeric, tol))
      mismatches.push_back(m);
  }
  return mismatches;
}

// (c) Same inputs, two runs of one backend: bit-identical results (no race decides a sum).
template <class Op, class Table>
std::vector<Mismatch> repeat_mismatches(const Op& op, const Table& kernels) {
  OpState<float> first = make_state<float>(op, 777, 1.0);
  OpState<float> second = first;
  for (OpState<float>* state : {&first, &second}) {
    op.forward(kernels, *state);
    op.backward(kernels, *state);
  }
  std::vector<Mismatch> mismatches;
  for (const TensorSpec& spec : op.tensors()) {
    for (auto& m : compare(spec.name, second.values[spec.name], first.values[spec.name], {0, 0}))
      mismatches.push_back(m);
    if (first.grads.count(spec.name)) {
      for (auto& m : compare("d" + spec.name, second.grads[spec.name], first.grads[spec.name], {0, 0}))
        mismatches.push_back(m);
    }
  }
  return mismatches;
}

}  // namespace sb::kernels::testing
