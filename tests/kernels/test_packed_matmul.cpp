// SPDX-License-Identifier: Apache-2.0
// The cpu back-end's 16-bit linear layer (StorageKernels<bf16> and <fp16> on Backend::cpu) over
// the path the ISA picks: the own AVX-512 GEMM that widens while it packs
// (kernels/cpu/packed_matmul.hpp) where oneDNN's ISA is AVX-512 or above (for bf16 only without
// bf16 instructions), else oneDNN bf16 or widening for OpenBLAS. ctest runs this file again with
// ONEDNN_MAX_CPU_ISA at AVX512_CORE (the packed GEMM for bf16 too) and AVX2 (widening), so every
// path is held against the double-precision reference on the same 16-bit values. Sizes cross
// every blocking edge: the 6-row and 64-column tiles, the 512-deep blocks, the tasks' row blocks.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "core/cpu_isa.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/storage_values.hpp"
#include "kernels/storage_kernels.hpp"
#include "cpu_flags.hpp"
#include "op_test_harness.hpp"

namespace sb::kernels::testing {
namespace {

template <class S>
std::vector<S> random_values(i64 n, std::uint64_t stream) {
  const CounterRng rng(23, stream);
  std::vector<S> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = cpu::stored<S>(static_cast<float>(rng.normal(i)));
  return v;
}

std::vector<float> random_floats(i64 n, std::uint64_t stream) {
  const CounterRng rng(29, stream);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<float>(rng.normal(i));
  return v;
}

struct Shape {
  i64 BT, C, OC;
  std::string text() const {
    return "BT=" + std::to_string(BT) + " C=" + std::to_string(C) + " OC=" + std::to_string(OC);
  }
};

// Ones and primes beside 6, 16, 64 and 512; K (C forward, OC for dinp, BT for dweight) past one
// and two depth blocks; more rows than one task's block in each GEMM.
const Shape kShapes[] = {{1, 1, 1},       {3, 17, 1},      {1, 65, 3},      {17, 3, 65},   {65, 127, 17},
                         {127, 65, 129},  {7, 513, 130},   {300, 300, 70},  {520, 19, 600}, {97, 257, 255},
                         {1100, 37, 70},  {5, 1030, 9},    {11, 23, 1031}};

template <class S>
constexpr DType kDType = std::is_same_v<S, bf16> ? DType::bf16 : DType::f16;

template <class S>
class SixteenBitLinearLayer : public ::testing::Test {};
using SixteenBitTypes = ::testing::Types<bf16, fp16>;
TYPED_TEST_SUITE(SixteenBitLinearLayer, SixteenBitTypes);

TYPED_TEST(SixteenBitLinearLayer, ForwardMatchesReference) {
  using S = TypeParam;
  MemoryTracker tracker;
  StorageKernels<S> k(Backend::cpu, tracker);
  const Tolerance tol = tolerance_for(kDType<S>, "matmul", Check::backend_forward);
  std::uint64_t stream = 0;
  for (const Shape& s : kShapes) {
    const auto inp = random_values<S>(s.BT * s.C, ++stream), weight = random_values<S>(s.OC * s.C, ++stream);
    const auto bias = random_values<S>(s.OC, ++stream);
    const auto inp_d = as_doubles(inp), weight_d = as_doubles(weight), bias_d = as_doubles(bias);
    for (const bool with_bias : {true, false}) {
      std::vector<S> out(s.BT * s.OC, cpu::stored<S>(-5.0f));
      std::vector<double> expected(s.BT * s.OC, -7.0);
      k.matmul_forward(out.data(), inp.data(), weight.data(), with_bias ? bias.data() : nullptr, s.BT, s.C, s.OC);
      reference::matmul_forward(expected.data(), inp_d.data(), weight_d.data(), with_bias ? bias_d.data() : nullptr,
                                s.BT, s.C, s.OC);
      expect_close("out", as_doubles(out), expected, tol, s.text() + (with_bias ? " bias" : " no bias"));
    }
  }
}

// dinp (S) and dweight, dbias (fp32) start from non-zero values: the kernel adds to them. dbias
// is each column of dout added row by row in float, on every path: the same bits as that loop.
TYPED_TEST(SixteenBitLinearLayer, BackwardAccumulatesLikeReference) {
  using S = TypeParam;
  MemoryTracker tracker;
  StorageKernels<S> k(Backend::cpu, tracker);
  const Tolerance tol = tolerance_for(kDType<S>, "matmul", Check::backend_backward);
  std::uint64_t stream = 100;
  for (const Shape& s : kShapes) {
    const auto dout = random_values<S>(s.BT * s.OC, ++stream), inp = random_values<S>(s.BT * s.C, ++stream);
    const auto weight = random_values<S>(s.OC * s.C, ++stream);
    auto dinp = random_values<S>(s.BT * s.C, ++stream);
    auto dweight = random_floats(s.OC * s.C, ++stream), dbias = random_floats(s.OC, ++stream);
    auto dinp_d = as_doubles(dinp), dweight_d = as_doubles(dweight), dbias_d = as_doubles(dbias);
    std::vector<float> dbias_in_order = dbias;
    for (i64 c = 0; c < s.OC; ++c) {
      float sum = 0;
      for (i64 r = 0; r < s.BT; ++r) sum += cpu::widened(dout[r * s.OC + c]);
      dbias_in_order[c] += sum;
    }
    k.matmul_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(), s.BT, s.C,
                      s.OC);
    reference::matmul_backward(dinp_d.data(), dweight_d.data(), dbias_d.data(), as_doubles(dout).data(),
                               as_doubles(inp).data(), as_doubles(weight).data(), s.BT, s.C, s.OC);
    expect_close("dinp", as_doubles(dinp), dinp_d, tol, s.text());
    expect_close("dweight", as_doubles(dweight), dweight_d, tol, s.text());
    expect_close("dbias", as_doubles(dbias), dbias_d, tol, s.text());
    for (i64 c = 0; c < s.OC; ++c) ASSERT_EQ(dbias[c], dbias_in_order[c]) << s.text() << " dbias[" << c << "]";
  }
}

// Without dbias the weight gradient is the same; a repeated call gives the same bits.
TYPED_TEST(SixteenBitLinearLayer, RepeatedCallsGiveTheSameBits) {
  using S = TypeParam;
  MemoryTracker tracker;
  StorageKernels<S> k(Backend::cpu, tracker);
  const Shape s{300, 300, 70};
  const auto dout = random_values<S>(s.BT * s.OC, 1), inp = random_values<S>(s.BT * s.C, 2);
  const auto weight = random_values<S>(s.OC * s.C, 3);
  std::vector<S> dinp_first(s.BT * s.C, cpu::stored<S>(0.5f)), dinp_second = dinp_first;
  std::vector<float> dweight_first(s.OC * s.C, 0.25f), dweight_second = dweight_first, dbias(s.OC, 0.0f);
  k.matmul_backward(dinp_first.data(), dweight_first.data(), dbias.data(), dout.data(), inp.data(), weight.data(),
                    s.BT, s.C, s.OC);
  k.matmul_backward(dinp_second.data(), dweight_second.data(), nullptr, dout.data(), inp.data(), weight.data(), s.BT,
                    s.C, s.OC);
  for (std::size_t i = 0; i < dinp_first.size(); ++i) ASSERT_EQ(dinp_first[i].bits, dinp_second[i].bits) << i;
  for (std::size_t i = 0; i < dweight_first.size(); ++i) ASSERT_EQ(dweight_first[i], dweight_second[i]) << i;
}

// ---- which path runs --------------------------------------------------------------------------
// The packed GEMM runs where the CPU reports AVX-512 (F, BW, VL, DQ) and F16C and oneDNN's
// (capped) ISA is AVX-512 or above; bf16 takes oneDNN's matmul first where it has bf16
// instructions, fp16 oneDNN's bf16 matmul over bf16 pairs where it has AMX.
TYPED_TEST(SixteenBitLinearLayer, PathFollowsTheIsa) {
  using S = TypeParam;
  const std::set<std::string> f = cpu_flags();
  bool avx512 = true;
  for (const char* flag : {"avx512f", "avx512bw", "avx512vl", "avx512dq", "f16c"}) avx512 = avx512 && f.count(flag) > 0;
  const std::string isa = onednn_cpu_isa();
  const bool capped_below = isa == "generic" || isa == "avx2" || isa == "avx2_vnni";
  EXPECT_EQ(cpu_runs_avx512_kernels(), avx512 && !capped_below) << isa;
  const bool onednn_bf16 = std::is_same_v<S, bf16> && onednn_has_native_bf16();
  const bool splits = isa == "amx_bf16" && avx512 && f.count("avx512_bf16") > 0;
  EXPECT_EQ(onednn_splits_fp16_matmul(), splits) << isa;
  const bool split_fp16 = std::is_same_v<S, fp16> && splits;
  MemoryTracker tracker;
  const StorageKernels<S> k(Backend::cpu, tracker);
  EXPECT_EQ(k.packed_gemms(), cpu_runs_avx512_kernels() && !onednn_bf16 && !split_fp16) << isa;
  EXPECT_EQ(k.widens_gemms(), !k.packed_gemms() && !onednn_bf16 && !split_fp16) << isa;
  const std::string precision = std::is_same_v<S, bf16> ? "bf16" : "fp16";
  const std::string expected = onednn_bf16  ? "onednn"
                               : split_fp16 ? "split-bf16+onednn"
                               : k.packed_gemms() ? "packed"
                                                  : "widened+openblas";
  EXPECT_EQ(matmul_implementation(precision), expected) << isa;
  EXPECT_FALSE(StorageKernels<S>(Backend::reference, tracker).packed_gemms());
}

}  // namespace
}  // namespace sb::kernels::testing
