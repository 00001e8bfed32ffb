// SPDX-License-Identifier: Apache-2.0
// The cpu back-end's elementwise kernels over bf16 and fp16 as they lie
// (kernels/cpu/sixteen_bit_elementwise.hpp) compute what widening every operand to float,
// running the float kernel and rounding the result once did (and still does on other
// back-ends): BatchNorm2d's forward with and without residual and ReLU, its backward apply, the
// ReLU backward, GELU, the residual add and softmax + cross-entropy bit for bit; sums over a
// channel or row (BatchNorm's channel and gradient sums, LayerNorm's statistics) within 1e-6
// relative and LayerNorm's outputs within one unit in the last place (a vectorised reduction's
// order may follow the type's vector width or the row's address); over rows that are not
// multiples of a vector (HW 49, 13, 1; C 37; V 5, 65, 1031) and ties at zero.
// StorageKernels<bf16> and <fp16> take them on the cpu only. Leaves out cuda.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "core/memory.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/sixteen_bit_elementwise.hpp"
#include "kernels/cpu/storage_values.hpp"
#include "kernels/storage_kernels.hpp"
#include "precision/bf16.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::testing {
namespace {

// Mantissa bits of the 16-bit type (one unit in the last place is 2^-bits of the leading one).
template <class S>
constexpr int kMantissaBits = std::is_same_v<S, bf16> ? 7 : 10;

template <class S>
std::vector<S> random_values(i64 n, std::uint64_t stream, double scale) {
  const CounterRng rng(17, stream);
  std::vector<S> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = cpu::stored<S>(static_cast<float>(scale * rng.normal(i)));
  for (i64 i = 0; i < n; i += 7) v[i] = cpu::stored<S>(0.0f);  // ReLU's tie
  return v;
}

template <class S>
std::vector<float> widened(const std::vector<S>& v) {
  std::vector<float> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_float(v[i]);
  return out;
}

template <class S>
std::vector<S> narrowed(const std::vector<float>& v) {
  std::vector<S> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = cpu::stored<S>(v[i]);
  return out;
}

// Index of the first value whose bits differ, or -1.
template <class T>
i64 first_difference(const std::vector<T>& a, const std::vector<T>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0) return static_cast<i64>(i);
  return -1;
}

template <class S>
class SixteenBitBatchNorm2d : public ::testing::Test {};
template <class S>
class SixteenBitElementwise : public ::testing::Test {};
using SixteenBitTypes = ::testing::Types<bf16, fp16>;
TYPED_TEST_SUITE(SixteenBitBatchNorm2d, SixteenBitTypes);
TYPED_TEST_SUITE(SixteenBitElementwise, SixteenBitTypes);

struct Shape {
  i64 N, C, HW;
  i64 size() const { return N * C * HW; }
  std::string text() const { return "N=" + std::to_string(N) + " C=" + std::to_string(C) + " HW=" + std::to_string(HW); }
};

const Shape kShapes[] = {{4, 16, 49}, {3, 5, 13}, {2, 3, 1}, {2, 8, 196}};

// Per-channel statistics the passes take: mean and rstd from the channel sums.
struct Statistics {
  std::vector<float> mean, rstd, running_mean, running_var;
  std::vector<double> sums;
};

Statistics statistics_of(const std::vector<float>& x, const Shape& s) {
  Statistics st{std::vector<float>(s.C), std::vector<float>(s.C), std::vector<float>(s.C, 0.0f),
                std::vector<float>(s.C, 1.0f), std::vector<double>(2 * s.C)};
  cpu::batchnorm2d_channel_sums(st.sums.data(), x.data(), s.N, s.C, s.HW);
  cpu::batchnorm2d_statistics(st.mean.data(), st.rstd.data(), st.running_mean.data(), st.running_var.data(),
                              st.sums.data(), static_cast<double>(s.N * s.HW) + 1.0, s.C, 0.1, 1e-5);
  return st;
}

TYPED_TEST(SixteenBitBatchNorm2d, ChannelSumsMatchTheWidenedKernel) {
  using S = TypeParam;
  std::uint64_t stream = 0;
  for (const Shape& s : kShapes) {
    const auto x = random_values<S>(s.size(), ++stream, 2.0);
    std::vector<double> expected(2 * s.C), actual(2 * s.C);
    cpu::batchnorm2d_channel_sums(expected.data(), widened(x).data(), s.N, s.C, s.HW);
    cpu::batchnorm2d_channel_sums(actual.data(), x.data(), s.N, s.C, s.HW);
    for (i64 i = 0; i < 2 * s.C; ++i) EXPECT_NEAR(actual[i], expected[i], 1e-6 * (1.0 + std::abs(expected[i])));
  }
}

TYPED_TEST(SixteenBitBatchNorm2d, ForwardApplyEqualsTheWidenedKernel) {
  using S = TypeParam;
  std::uint64_t stream = 100;
  for (const Shape& s : kShapes) {
    const auto x = random_values<S>(s.size(), ++stream, 2.0), residual = random_values<S>(s.size(), ++stream, 1.0);
    const auto weight = random_values<S>(s.C, ++stream, 1.0), bias = random_values<S>(s.C, ++stream, 0.5);
    const Statistics st = statistics_of(widened(x), s);
    for (const bool with_residual : {false, true})
      for (const bool relu : {false, true}) {
        std::vector<float> wide(s.size());
        cpu::batchnorm2d_forward_apply(wide.data(), widened(x).data(), st.mean.data(), st.rstd.data(),
                                       widened(weight).data(), widened(bias).data(),
                                       with_residual ? widened(residual).data() : nullptr, relu, s.N, s.C, s.HW);
        std::vector<S> actual(s.size());
        cpu::batchnorm2d_forward_apply(actual.data(), x.data(), st.mean.data(), st.rstd.data(), weight.data(),
                                       bias.data(), with_residual ? residual.data() : nullptr, relu, s.N, s.C, s.HW);
        EXPECT_EQ(first_difference(actual, narrowed<S>(wide)), -1)
            << s.text() << " residual " << with_residual << " relu " << relu;
      }
  }
}

TYPED_TEST(SixteenBitBatchNorm2d, BackwardMatchesTheWidenedKernels) {
  using S = TypeParam;
  std::uint64_t stream = 200;
  for (const Shape& s : kShapes) {
    const auto x = random_values<S>(s.size(), ++stream, 2.0), dout = random_values<S>(s.size(), ++stream, 1.0),
               relu_out = random_values<S>(s.size(), ++stream, 1.0), weight = random_values<S>(s.C, ++stream, 1.0);
    const Statistics st = statistics_of(widened(x), s);
    const double count = static_cast<double>(s.N * s.HW);
    for (const bool relu : {false, true}) {
      std::vector<double> wide_sums(2 * s.C), sums(2 * s.C);
      std::vector<float> wide_dweight(s.C, 0.5f), wide_dbias(s.C, -0.5f), dweight(s.C, 0.5f), dbias(s.C, -0.5f);
      const std::vector<float> x_f = widened(x), dout_f = widened(dout), relu_f = widened(relu_out);
      cpu::batchnorm2d_backward_sums(wide_sums.data(), wide_dweight.data(), wide_dbias.data(), dout_f.data(),
                                     relu ? relu_f.data() : nullptr, x_f.data(), st.mean.data(), st.rstd.data(), s.N,
                                     s.C, s.HW);
      cpu::batchnorm2d_backward_sums(sums.data(), dweight.data(), dbias.data(), dout.data(),
                                     relu ? relu_out.data() : nullptr, x.data(), st.mean.data(), st.rstd.data(), s.N,
                                     s.C, s.HW);
      for (i64 c = 0; c < s.C; ++c) {
        EXPECT_NEAR(sums[c], wide_sums[c], 1e-5 * (1.0 + std::abs(wide_sums[c]))) << s.text() << " relu " << relu;
        EXPECT_NEAR(sums[s.C + c], wide_sums[s.C + c], 1e-5 * (1.0 + std::abs(wide_sums[s.C + c])));
        EXPECT_NEAR(dweight[c], wide_dweight[c], 1e-5f * (1.0f + std::abs(wide_dweight[c])));
        EXPECT_NEAR(dbias[c], wide_dbias[c], 1e-5f * (1.0f + std::abs(wide_dbias[c])));
      }

      std::vector<float> wide_dinp(s.size());
      cpu::batchnorm2d_backward_apply(wide_dinp.data(), dout_f.data(), relu ? relu_f.data() : nullptr, x_f.data(),
                                      widened(weight).data(), st.mean.data(), st.rstd.data(), wide_sums.data(), count,
                                      s.N, s.C, s.HW);
      std::vector<S> dinp(s.size());
      cpu::batchnorm2d_backward_apply(dinp.data(), dout.data(), relu ? relu_out.data() : nullptr, x.data(),
                                      weight.data(), st.mean.data(), st.rstd.data(), wide_sums.data(), count, s.N,
                                      s.C, s.HW);
      EXPECT_EQ(first_difference(dinp, narrowed<S>(wide_dinp)), -1) << s.text() << " relu " << relu;
    }
  }
}

TYPED_TEST(SixteenBitElementwise, ReluBackwardEqualsTheWidenedKernel) {
  using S = TypeParam;
  const i64 n = 100'003;  // chunks of the elementwise split and a tail
  const auto out = random_values<S>(n, 301, 1.0), dout = random_values<S>(n, 302, 1.0),
             dinp0 = random_values<S>(n, 303, 1.0);
  std::vector<float> wide = widened(dinp0);
  cpu::relu_backward(wide.data(), widened(out).data(), widened(dout).data(), n);
  std::vector<S> actual = dinp0;
  cpu::relu_backward(actual.data(), out.data(), dout.data(), n);
  EXPECT_EQ(first_difference(actual, narrowed<S>(wide)), -1);
}

TYPED_TEST(SixteenBitElementwise, GeluEqualsTheWidenedKernel) {
  using S = TypeParam;
  const i64 n = 100'003;
  const auto x = random_values<S>(n, 401, 3.0), dout = random_values<S>(n, 402, 1.0),
             dinp0 = random_values<S>(n, 403, 1.0);
  std::vector<float> wide(n);
  cpu::gelu_forward(wide.data(), widened(x).data(), n);
  std::vector<S> actual(n);
  cpu::gelu_forward(actual.data(), x.data(), n);
  EXPECT_EQ(first_difference(actual, narrowed<S>(wide)), -1) << "forward";
  std::vector<float> wide_dinp = widened(dinp0);
  cpu::gelu_backward(wide_dinp.data(), widened(x).data(), widened(dout).data(), n);
  std::vector<S> dinp = dinp0;
  cpu::gelu_backward(dinp.data(), x.data(), dout.data(), n);
  EXPECT_EQ(first_difference(dinp, narrowed<S>(wide_dinp)), -1) << "backward";
}

TYPED_TEST(SixteenBitElementwise, ResidualEqualsTheWidenedKernel) {
  using S = TypeParam;
  const i64 n = 100'003;
  const auto a = random_values<S>(n, 501, 1.0), b = random_values<S>(n, 502, 1.0), dout = random_values<S>(n, 503, 1.0);
  std::vector<float> wide(n);
  cpu::residual_forward(wide.data(), widened(a).data(), widened(b).data(), n);
  std::vector<S> actual(n);
  cpu::residual_forward(actual.data(), a.data(), b.data(), n);
  EXPECT_EQ(first_difference(actual, narrowed<S>(wide)), -1) << "forward";
  std::vector<float> wide_da = widened(a), wide_db = widened(b);
  cpu::residual_backward(wide_da.data(), wide_db.data(), widened(dout).data(), n);
  std::vector<S> da = a, db = b;
  cpu::residual_backward(da.data(), db.data(), dout.data(), n);
  EXPECT_EQ(first_difference(da, narrowed<S>(wide_da)), -1) << "backward da";
  EXPECT_EQ(first_difference(db, narrowed<S>(wide_db)), -1) << "backward db";
}

// Softmax + cross-entropy over rows of V logits (a vocabulary narrower than a vector, one not a
// multiple of it, and one row wider than a row block), targets anywhere in the row.
TYPED_TEST(SixteenBitElementwise, CrossentropyEqualsTheWidenedKernel) {
  using S = TypeParam;
  for (const i64 V : {i64{5}, i64{65}, i64{256}, i64{1031}}) {
    const i64 BT = 37;
    const auto logits = random_values<S>(BT * V, 701 + V, 4.0), dlogits0 = random_values<S>(BT * V, 702 + V, 1.0);
    std::vector<std::int32_t> targets(BT);
    std::vector<float> dlosses(BT);
    for (i64 r = 0; r < BT; ++r) {
      targets[r] = static_cast<std::int32_t>((r * 7 + V / 2) % V);
      dlosses[r] = 1.0f / static_cast<float>(r + 3);
    }
    std::vector<float> wide_losses(BT), wide_probs(BT * V);
    cpu::crossentropy_forward(wide_losses.data(), wide_probs.data(), widened(logits).data(), targets.data(), BT, V);
    std::vector<float> losses(BT);
    std::vector<S> probs(BT * V);
    cpu::crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), BT, V);
    EXPECT_EQ(first_difference(losses, wide_losses), -1) << "losses, V=" << V;
    EXPECT_EQ(first_difference(probs, narrowed<S>(wide_probs)), -1) << "probs, V=" << V;
    std::vector<float> wide_dlogits = widened(dlogits0);
    cpu::crossentropy_backward(wide_dlogits.data(), widened(probs).data(), targets.data(), dlosses.data(), BT, V);
    std::vector<S> dlogits = dlogits0;
    cpu::crossentropy_backward(dlogits.data(), probs.data(), targets.data(), dlosses.data(), BT, V);
    EXPECT_EQ(first_difference(dlogits, narrowed<S>(wide_dlogits)), -1) << "dlogits, V=" << V;
  }
}

// A target outside the vocabulary is refused before any row is written.
TYPED_TEST(SixteenBitElementwise, CrossentropyRefusesATargetOutsideTheVocabulary) {
  using S = TypeParam;
  const i64 BT = 3, V = 8;
  const auto logits = random_values<S>(BT * V, 711, 1.0);
  const std::vector<std::int32_t> targets = {1, 8, 2};
  std::vector<float> losses(BT, -1.0f);
  std::vector<S> probs(BT * V);
  EXPECT_THROW(cpu::crossentropy_forward(losses.data(), probs.data(), logits.data(), targets.data(), BT, V),
               std::exception);
  EXPECT_EQ(losses, std::vector<float>(BT, -1.0f));
}

// One unit in the last place of b, or less.
template <class S>
bool within_one_ulp(S a, S b) {
  const float x = to_float(a), y = to_float(b);
  return std::abs(x - y) <= std::ldexp(std::abs(y), -kMantissaBits<S>) + 1e-30f;
}

TYPED_TEST(SixteenBitElementwise, LayernormMatchesTheWidenedKernel) {
  using S = TypeParam;
  for (const i64 C : {i64{256}, i64{37}}) {
    const i64 N = 301;
    const auto x = random_values<S>(N * C, 601 + C, 2.0), dout = random_values<S>(N * C, 602 + C, 1.0),
               dinp0 = random_values<S>(N * C, 603 + C, 1.0), weight = random_values<S>(C, 604 + C, 1.0),
               bias = random_values<S>(C, 605 + C, 0.5);
    std::vector<float> wide(N * C), wide_mean(N), wide_rstd(N), mean(N), rstd(N);
    cpu::layernorm_forward(wide.data(), wide_mean.data(), wide_rstd.data(), widened(x).data(), widened(weight).data(),
                           widened(bias).data(), N, C);
    std::vector<S> actual(N * C);
    cpu::layernorm_forward(actual.data(), mean.data(), rstd.data(), x.data(), weight.data(), bias.data(), N, C);
    const auto expected = narrowed<S>(wide);
    for (i64 i = 0; i < N * C; ++i)
      ASSERT_TRUE(within_one_ulp(actual[i], expected[i])) << "C " << C << " forward " << i;
    for (i64 n = 0; n < N; ++n) {
      EXPECT_NEAR(mean[n], wide_mean[n], 1e-6f * (1.0f + std::abs(wide_mean[n])));
      EXPECT_NEAR(rstd[n], wide_rstd[n], 1e-6f * rstd[n]);
    }
    std::vector<float> wide_dinp = widened(dinp0), wide_dweight(C, 0.25f), wide_dbias(C, 0.25f), dweight(C, 0.25f),
                       dbias(C, 0.25f);
    cpu::layernorm_backward(wide_dinp.data(), wide_dweight.data(), wide_dbias.data(), widened(dout).data(),
                            widened(x).data(), widened(weight).data(), wide_mean.data(), wide_rstd.data(), N, C);
    std::vector<S> dinp = dinp0;
    cpu::layernorm_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), x.data(), weight.data(),
                            wide_mean.data(), wide_rstd.data(), N, C);
    const auto expected_dinp = narrowed<S>(wide_dinp);
    for (i64 i = 0; i < N * C; ++i)
      ASSERT_TRUE(within_one_ulp(dinp[i], expected_dinp[i])) << "C " << C << " backward " << i;
    EXPECT_EQ(first_difference(dweight, wide_dweight), -1) << "C " << C;  // column sums: the same order
    EXPECT_EQ(first_difference(dbias, wide_dbias), -1) << "C " << C;
  }
}

TEST(SixteenBitElementwise, StorageKernelsTakeThemOnTheCpuOnly) {
  MemoryTracker tracker;
  EXPECT_TRUE(StorageKernels<bf16>(Backend::cpu, tracker).native_elementwise());
  EXPECT_FALSE(StorageKernels<bf16>(Backend::reference, tracker).native_elementwise());
  EXPECT_TRUE(StorageKernels<fp16>(Backend::cpu, tracker).native_elementwise());
  EXPECT_FALSE(StorageKernels<fp16>(Backend::reference, tracker).native_elementwise());
  EXPECT_FALSE(StorageKernels<float>(Backend::cpu, tracker).native_elementwise());
}

}  // namespace
}  // namespace sb::kernels::testing
