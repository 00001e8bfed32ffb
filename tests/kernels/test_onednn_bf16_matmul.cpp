// SPDX-License-Identifier: Apache-2.0
// The cpu back-end's bf16 linear layer on oneDNN (StorageKernels<bf16> on Backend::cpu): which
// path runs (oneDNN bf16 matmul, the packed AVX-512 GEMM or widening) follows the ISA oneDNN
// reports, and that ISA follows /proc/cpuinfo capped by ONEDNN_MAX_CPU_ISA (ctest runs this file
// again with the cap at AVX512_CORE_BF16, AVX512_CORE and AVX2); the primitives' cache and ISA.
// Leaves out cuda; the values against the reference are test_packed_matmul.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/cpu_isa.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/onednn_bf16_matmul.hpp"
#include "kernels/storage_kernels.hpp"
#include "cpu_flags.hpp"
#include "op_test_harness.hpp"

namespace sb::kernels::testing {
namespace {

std::vector<bf16> random_bf16(i64 n, std::uint64_t stream) {
  const CounterRng rng(7, stream);
  std::vector<bf16> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = to_bf16(static_cast<float>(rng.normal(i)));
  return v;
}

struct Shape {
  i64 BT, C, OC;
  std::string text() const {
    return "BT=" + std::to_string(BT) + " C=" + std::to_string(C) + " OC=" + std::to_string(OC);
  }
};

// Forward and backward against the reference on awkward shapes, at every ISA cap: the bf16 case
// of test_packed_matmul.cpp's SixteenBitLinearLayer (whichever GEMM StorageKernels<bf16> runs).

// A second call of the same shape reuses the cached primitive and gives the same bits.
TEST(OnednnBf16Matmul, RepeatedShapeGivesTheSameResult) {
  MemoryTracker tracker;
  StorageKernels<bf16> k(Backend::cpu, tracker);
  const Shape s{65, 127, 17};
  const auto inp = random_bf16(s.BT * s.C, 1), weight = random_bf16(s.OC * s.C, 2), bias = random_bf16(s.OC, 3);
  std::vector<bf16> first(s.BT * s.OC), second(s.BT * s.OC);
  k.matmul_forward(first.data(), inp.data(), weight.data(), bias.data(), s.BT, s.C, s.OC);
  k.matmul_forward(second.data(), inp.data(), weight.data(), bias.data(), 3, 5, 7);  // another shape between
  k.matmul_forward(second.data(), inp.data(), weight.data(), bias.data(), s.BT, s.C, s.OC);
  for (std::size_t i = 0; i < first.size(); ++i) ASSERT_EQ(first[i].bits, second[i].bits) << i;
}

// ---- which path runs --------------------------------------------------------------------------
const std::vector<std::string> kIsaOrder = {"generic", "avx2", "avx2_vnni", "avx512", "avx512_bf16", "amx_bf16"};

i64 isa_rank(const std::string& isa) {
  const auto found = std::find(kIsaOrder.begin(), kIsaOrder.end(), isa);
  EXPECT_NE(found, kIsaOrder.end()) << "unknown ISA name " << isa;
  return found - kIsaOrder.begin();
}

// The best ISA of this CPU as oneDNN names its levels, from the kernel's flags.
std::string isa_from_cpu_flags() {
  const std::set<std::string> f = cpu_flags();
  const auto has = [&](std::initializer_list<const char*> names) {
    return std::all_of(names.begin(), names.end(), [&](const char* n) { return f.count(n) > 0; });
  };
  const bool avx512 = has({"avx512f", "avx512bw", "avx512vl", "avx512dq"});
  if (avx512 && has({"avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8", "amx_tile"})) return "amx_bf16";
  if (avx512 && has({"avx512_vnni", "avx512_bf16"})) return "avx512_bf16";
  if (avx512) return "avx512";
  if (has({"avx2", "avx_vnni"})) return "avx2_vnni";
  if (has({"avx2"})) return "avx2";
  return "generic";
}

// The cap ctest sets, in the same names ("" when unset).
std::string isa_cap() {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (!cap || !*cap) return "";
  const std::map<std::string, std::string> names = {{"AVX512_CORE_AMX", "amx_bf16"},
                                                    {"AVX512_CORE_BF16", "avx512_bf16"},
                                                    {"AVX512_CORE_VNNI", "avx512"},
                                                    {"AVX512_CORE", "avx512"},
                                                    {"AVX2_VNNI", "avx2_vnni"},
                                                    {"AVX2", "avx2"}};
  const auto found = names.find(cap);
  EXPECT_NE(found, names.end()) << "ONEDNN_MAX_CPU_ISA=" << cap << " is not one this test knows";
  return found == names.end() ? "" : found->second;
}

TEST(OnednnBf16Matmul, IsaIsTheCpusCappedByTheEnvironment) {
  std::string expected = isa_from_cpu_flags();
  const std::string cap = isa_cap();
  if (!cap.empty() && isa_rank(cap) < isa_rank(expected)) expected = cap;
  EXPECT_EQ(onednn_cpu_isa(), expected) << "cpu flags say " << isa_from_cpu_flags() << ", cap '" << cap << "'";
}

TEST(OnednnBf16Matmul, GemmsWidenExactlyWithoutBf16Instructions) {
  const std::string isa = onednn_cpu_isa();
  const bool native = isa == "amx_bf16" || isa == "avx512_bf16";
  EXPECT_EQ(onednn_has_native_bf16(), native) << isa;
  MemoryTracker tracker;
  // (below bf16 instructions the own AVX-512 GEMM takes them where it runs: test_packed_matmul.cpp)
  EXPECT_EQ(StorageKernels<bf16>(Backend::cpu, tracker).widens_gemms(), !native && !cpu_runs_avx512_kernels()) << isa;
  EXPECT_EQ(StorageKernels<fp16>(Backend::cpu, tracker).widens_gemms(), !cpu_runs_avx512_kernels()) << isa;
  EXPECT_TRUE(StorageKernels<bf16>(Backend::reference, tracker).widens_gemms());
  EXPECT_FALSE(StorageKernels<float>(Backend::cpu, tracker).widens_gemms());
}

// Where bf16 runs natively, oneDNN's chosen kernels use the ISA it reports (not its reference
// or an emulating fallback) for both GEMM layouts: the transposed source of dweight included.
TEST(OnednnBf16Matmul, NativeGemmsRunOnTheReportedIsa) {
  if (!onednn_has_native_bf16()) GTEST_SKIP() << "no bf16 instructions at ISA " << onednn_cpu_isa();
  MemoryTracker tracker;
  WideningScratch scratch(tracker, "test scratch");
  cpu::OnednnBf16Matmul matmul(scratch);
  const Shape s{127, 65, 129};
  const auto inp = random_bf16(s.BT * s.C, 1), weight = random_bf16(s.OC * s.C, 2);
  const auto dout = random_bf16(s.BT * s.OC, 3);
  std::vector<bf16> out(s.BT * s.OC), dinp(s.BT * s.C);
  std::vector<float> dweight(s.OC * s.C);
  const std::string isa_name = onednn_cpu_isa() == "amx_bf16" ? "amx" : "avx512_core_bf16";
  matmul.forward(out.data(), inp.data(), weight.data(), nullptr, s.BT, s.C, s.OC);
  EXPECT_NE(matmul.last_implementation().find(isa_name), std::string::npos) << matmul.last_implementation();
  matmul.backward(dinp.data(), dweight.data(), nullptr, dout.data(), inp.data(), weight.data(), s.BT, s.C, s.OC);
  EXPECT_NE(matmul.last_implementation().find(isa_name), std::string::npos) << matmul.last_implementation();
}

// ---- fp16 as bf16 pairs ------------------------------------------------------------------------
std::vector<fp16> random_fp16(i64 n, std::uint64_t stream) {
  const CounterRng rng(11, stream);
  std::vector<fp16> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = to_fp16(static_cast<float>(rng.normal(i)));
  return v;
}

// |got - exact| <= rounding * |exact| + 2^-15 * sum |a_k b_k|: the result's own rounding plus
// what hi.hi + hi.lo + lo.hi and fp32 sums may lose. Dropping the lo parts would miss by about
// 2^-9 of each product and fail this.
void expect_within_split_bound(const std::string& name, const std::vector<double>& got,
                               const std::vector<double>& exact, const std::vector<double>& magnitude,
                               double rounding, const std::string& where) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double bound = rounding * std::fabs(exact[i]) + std::ldexp(magnitude[i], -15) + 1e-30;
    ASSERT_LE(std::fabs(got[i] - exact[i]), bound) << name << "[" << i << "] " << where << ": " << got[i]
                                                   << " against " << exact[i];
  }
}

// One GEMM in double: c (M,N) = start + sum_k a(m,k) b(k,n), with sum |a b| beside it; a and b
// given by accessors.
template <class A, class B>
void exact_gemm(std::vector<double>& c, std::vector<double>& magnitude, i64 M, i64 N, i64 K, const A& a,
                const B& b) {
  magnitude.assign(static_cast<std::size_t>(M * N), 0.0);
  for (i64 m = 0; m < M; ++m)
    for (i64 n = 0; n < N; ++n)
      for (i64 k = 0; k < K; ++k) {
        const double p = a(m, k) * b(k, n);
        c[m * N + n] += p;
        magnitude[m * N + n] += std::fabs(p);
      }
}

// Whether oneDNN runs bf16 here; where it does not, the fp16 pair path must never be chosen.
bool bf16_runs_here() {
  if (onednn_has_native_bf16()) return true;
  EXPECT_FALSE(onednn_splits_fp16_matmul()) << onednn_cpu_isa();
  return false;
}

// The class with its scratch, as StorageKernels<fp16> holds it.
struct Fp16PairMatmul {
  MemoryTracker tracker;
  WideningScratch scratch{tracker, "test scratch"};
  cpu::OnednnBf16Matmul matmul{scratch};
};

// The class on fp16 operands: where oneDNN runs bf16 (AMX or AVX512-BF16, though StorageKernels
// takes this path on AMX only) against double sums; below that the path is never chosen.
TEST(OnednnBf16Matmul, Fp16AsBf16PairsMatchesExactSums) {
  EXPECT_EQ(onednn_splits_fp16_matmul(), onednn_cpu_isa() == "amx_bf16" && cpu_runs_avx512_kernels())
      << onednn_cpu_isa();
  if (!bf16_runs_here()) return;
  Fp16PairMatmul pair;
  cpu::OnednnBf16Matmul& matmul = pair.matmul;
  const double fp16_rounding = std::ldexp(1.0, -11), none = 0.0;
  std::uint64_t stream = 0;
  for (const Shape& s : {Shape{1, 1, 1}, Shape{3, 17, 1}, Shape{17, 3, 65}, Shape{65, 127, 17},
                         Shape{127, 65, 129}, Shape{7, 513, 130}, Shape{300, 40, 70}}) {
    const auto inp = random_fp16(s.BT * s.C, ++stream), weight = random_fp16(s.OC * s.C, ++stream);
    const auto bias = random_fp16(s.OC, ++stream), dout = random_fp16(s.BT * s.OC, ++stream);
    auto dinp = random_fp16(s.BT * s.C, ++stream);
    std::vector<float> dweight(s.OC * s.C, 0.5f), dbias(s.OC, -0.25f);
    const auto f = [](fp16 v) { return static_cast<double>(to_float(v)); };
    std::vector<double> magnitude;

    std::vector<fp16> out(s.BT * s.OC);
    matmul.forward(out.data(), inp.data(), weight.data(), bias.data(), s.BT, s.C, s.OC);
    std::vector<double> out_exact(s.BT * s.OC);
    for (i64 r = 0; r < s.BT; ++r)
      for (i64 o = 0; o < s.OC; ++o) out_exact[r * s.OC + o] = f(bias[o]);
    exact_gemm(out_exact, magnitude, s.BT, s.OC, s.C, [&](i64 m, i64 k) { return f(inp[m * s.C + k]); },
               [&](i64 k, i64 n) { return f(weight[n * s.C + k]); });
    expect_within_split_bound("out", as_doubles(out), out_exact, magnitude, fp16_rounding, s.text());

    std::vector<double> dinp_exact(as_doubles(dinp)), dweight_exact(as_doubles(dweight));
    matmul.backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(), s.BT, s.C,
                    s.OC);
    exact_gemm(dinp_exact, magnitude, s.BT, s.C, s.OC, [&](i64 m, i64 k) { return f(dout[m * s.OC + k]); },
               [&](i64 k, i64 n) { return f(weight[k * s.C + n]); });
    expect_within_split_bound("dinp", as_doubles(dinp), dinp_exact, magnitude, fp16_rounding, s.text());
    exact_gemm(dweight_exact, magnitude, s.OC, s.C, s.BT, [&](i64 m, i64 k) { return f(dout[k * s.OC + m]); },
               [&](i64 k, i64 n) { return f(inp[k * s.C + n]); });
    expect_within_split_bound("dweight", as_doubles(dweight), dweight_exact, magnitude, none, s.text());
    for (i64 o = 0; o < s.OC; ++o) {
      float sum = 0;
      for (i64 r = 0; r < s.BT; ++r) sum += to_float(dout[r * s.OC + o]);
      ASSERT_EQ(dbias[o], -0.25f + sum) << s.text() << " dbias[" << o << "]";
    }
  }
}

// An inf or NaN operand gives a non-finite result (dynamic loss scaling's signal), never a
// finite one.
TEST(OnednnBf16Matmul, Fp16NonFiniteOperandsGiveNonFiniteResults) {
  if (!bf16_runs_here()) return;
  Fp16PairMatmul pair;
  cpu::OnednnBf16Matmul& matmul = pair.matmul;
  const i64 BT = 4, C = 33, OC = 5;
  for (const float bad : {INFINITY, -INFINITY, NAN}) {
    auto inp = random_fp16(BT * C, 1);
    const auto weight = random_fp16(OC * C, 2);
    inp[2 * C + 7] = to_fp16(bad);
    std::vector<fp16> out(BT * OC);
    matmul.forward(out.data(), inp.data(), weight.data(), nullptr, BT, C, OC);
    for (i64 r = 0; r < BT; ++r)
      for (i64 o = 0; o < OC; ++o)
        EXPECT_EQ(std::isfinite(to_float(out[r * OC + o])), r != 2) << bad << " row " << r << " col " << o;
  }
}

}  // namespace
}  // namespace sb::kernels::testing
