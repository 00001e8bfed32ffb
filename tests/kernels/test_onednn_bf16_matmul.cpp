// SPDX-License-Identifier: Apache-2.0
// The cpu back-end's bf16 linear layer on oneDNN (StorageKernels<bf16> on Backend::cpu): which
// path runs (oneDNN bf16 matmul, the packed AVX-512 GEMM or widening) follows the ISA oneDNN
// reports, and that ISA follows /proc/cpuinfo capped by ONEDNN_MAX_CPU_ISA (ctest runs this file
// again with the cap at AVX512_CORE_BF16, AVX512_CORE and AVX2); the primitives' cache and ISA.
// Leaves out cuda; the values against the reference are test_packed_matmul.cpp's.
#include <gtest/gtest.h>

#include <algorithm>
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

}  // namespace
}  // namespace sb::kernels::testing
