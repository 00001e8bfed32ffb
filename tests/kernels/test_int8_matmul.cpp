// SPDX-License-Identifier: Apache-2.0
// The int8 inference kernels: the cpu quantiser and int8 GEMM equal the reference bit for bit
// over shapes that are not multiples of the cpu tiles (2 rows × 4 channels, 32-row blocks),
// with and without bias, at full ±127 range, on oneDNN's VNNI/AMX sums where the CPU has them
// and on the own kernel below (int8_matmul_isa_* cap the ISA); the reference against
// hand-computed values; the dispatch tables hold them. Leaves out cuda (tests/cuda) and the
// quantisers (tests/compress).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/cpu_isa.hpp"
#include "kernels/cpu/onednn_int8_matmul.hpp"
#include "kernels/kernels.hpp"
#include "int8_test_values.hpp"

namespace sb::kernels::testing {
namespace {

constexpr std::uint64_t kSeed = 42;

struct GemmShape {
  i64 BT, C, OC;
};

TEST(Int8Matmul, CpuEqualsReferenceBitForBit) {
  // resnet-mini's stem (9), a 3×3 conv of 16 channels (144), gpt-tiny's C (256) and odd sizes
  const GemmShape shapes[] = {{1, 1, 1},   {3, 9, 16},  {37, 144, 16}, {65, 257, 31},
                              {33, 576, 64}, {127, 256, 769}, {2, 1023, 5}, {70, 3, 10}};
  std::uint64_t stream = 0;
  for (const GemmShape& s : shapes) {
    const auto inp = random_int8(kSeed, s.BT * s.C, ++stream);
    const auto weight = random_int8(kSeed, s.OC * s.C, ++stream);
    auto weight_scale = random_floats(kSeed, s.OC, ++stream, 1e-3);
    for (float& w : weight_scale) w = std::abs(w) + 1e-5f;
    const auto bias = random_floats(kSeed, s.OC, ++stream, 1.0);
    for (const float* b : {bias.data(), static_cast<const float*>(nullptr)}) {
      std::vector<float> expected(s.BT * s.OC, -1.0f), actual(s.BT * s.OC, -2.0f);
      reference::int8_matmul_forward(expected.data(), inp.data(), weight.data(), 0.0173f,
                                     weight_scale.data(), b, s.BT, s.C, s.OC);
      cpu::int8_matmul_forward(actual.data(), inp.data(), weight.data(), 0.0173f,
                               weight_scale.data(), b, s.BT, s.C, s.OC);
      EXPECT_EQ(first_bit_difference(actual, expected), -1)
          << "BT=" << s.BT << " C=" << s.C << " OC=" << s.OC << (b ? " bias" : " no bias");
    }
  }
}

// The extreme products: every element -127 or 127, so the int32 sums reach ±127²·C.
TEST(Int8Matmul, SaturatedOperandsSumExactly) {
  const i64 BT = 5, C = 1001, OC = 7;
  std::vector<std::int8_t> inp(BT * C, 127), weight(OC * C, -127);
  const std::vector<float> weight_scale(OC, 1.0f);
  std::vector<float> expected(BT * OC), actual(BT * OC);
  reference::int8_matmul_forward(expected.data(), inp.data(), weight.data(), 1.0f,
                                 weight_scale.data(), nullptr, BT, C, OC);
  cpu::int8_matmul_forward(actual.data(), inp.data(), weight.data(), 1.0f, weight_scale.data(),
                           nullptr, BT, C, OC);
  for (i64 i = 0; i < BT * OC; ++i) {
    EXPECT_EQ(expected[i], -127.0f * 127.0f * C);  // 16,145,129: below 2^24, exact in float
    EXPECT_EQ(actual[i], expected[i]);
  }
}

TEST(Int8Matmul, ReferenceDequantisesWithBothScalesAndBias) {
  // inp (2,3), weight (2,3): sums [1·1+2·2+3·3, 1·(-1)+2·0+3·1; -1·1+0+4·3, -1·(-1)+0+4·1]
  const std::vector<std::int8_t> inp{1, 2, 3, -1, 0, 4}, weight{1, 2, 3, -1, 0, 1};
  const std::vector<float> weight_scale{0.5f, 0.25f}, bias{1.0f, -1.0f};
  std::vector<float> out(4);
  reference::int8_matmul_forward(out.data(), inp.data(), weight.data(), 2.0f, weight_scale.data(),
                                 bias.data(), 2, 3, 2);
  EXPECT_EQ(out, (std::vector<float>{14 * 1.0f + 1, 2 * 0.5f - 1, 11 * 1.0f + 1, 5 * 0.5f - 1}));
}

TEST(QuantizeInt8, CpuEqualsReferenceAndSaturates) {
  const i64 n = 3 * 8192 + 77;  // ends inside a cpu chunk
  auto inp = random_floats(kSeed, n, 99, 3.0);
  inp[0] = 1e30f, inp[1] = -1e30f, inp[2] = 0.5f * 0.05f, inp[3] = 1.5f * 0.05f, inp[4] = -0.0f;
  std::vector<std::int8_t> expected(n, 1), actual(n, 2);
  reference::quantize_int8(expected.data(), inp.data(), 0.05f, n);
  cpu::quantize_int8(actual.data(), inp.data(), 0.05f, n);
  EXPECT_EQ(actual, expected);
  EXPECT_EQ(expected[0], 127);
  EXPECT_EQ(expected[1], -127);  // symmetric: -128 is never used
  EXPECT_EQ(expected[2], 0);     // 0.5 rounds to even
  EXPECT_EQ(expected[3], 2);     // 1.5 rounds to even
  for (i64 i = 5; i < n; ++i) EXPECT_GE(expected[i], -127);
}

// Where oneDNN runs VNNI or AMX-INT8 (this CPU, or the cap ONEDNN_MAX_CPU_ISA set for the
// int8_matmul_isa_* tests) it sums every shape above, else it declines and the own kernel sums.
TEST(Int8Matmul, OnednnSumsExactlyWhereItHasInt8DotProducts) {
  const i64 BT = 65, C = 257, OC = 31;
  const auto inp = random_int8(kSeed, BT * C, 7), weight = random_int8(kSeed, OC * C, 8);
  std::vector<std::int32_t> sums(BT * OC, -1);
  const bool summed = cpu::onednn_int8_sums(sums.data(), inp.data(), weight.data(), BT, C, OC);
  EXPECT_EQ(summed, onednn_has_int8_dot_products()) << "oneDNN ISA " << onednn_cpu_isa();
  EXPECT_EQ(int8_matmul_implementation(), summed ? "onednn" : "own");
  if (!summed) return;
  for (i64 r = 0; r < BT; ++r)
    for (i64 o = 0; o < OC; ++o) {
      std::int32_t expected = 0;
      for (i64 c = 0; c < C; ++c) expected += inp[r * C + c] * weight[o * C + c];
      ASSERT_EQ(sums[r * OC + o], expected) << "row " << r << " channel " << o;
    }
}

TEST(Int8Matmul, DispatchTablesHoldTheInt8Kernels) {
  EXPECT_EQ(kernels_for(Backend::reference).int8_matmul_forward, &reference::int8_matmul_forward);
  EXPECT_EQ(kernels_for(Backend::reference).quantize_int8, &reference::quantize_int8);
  EXPECT_EQ(kernels_for(Backend::cpu).int8_matmul_forward, &cpu::int8_matmul_forward);
  EXPECT_EQ(kernels_for(Backend::cpu).quantize_int8, &cpu::quantize_int8);
}

}  // namespace
}  // namespace sb::kernels::testing
