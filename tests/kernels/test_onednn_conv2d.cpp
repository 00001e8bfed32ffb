// SPDX-License-Identifier: Apache-2.0
// The cpu back-end's oneDNN convolutions (kernels/cpu/onednn_conv2d.hpp) against the own kernels
// they replace (conv2d.cpp, the reference here), fp32 and bf16, forward and backward with every
// output accumulated into non-zero values, over awkward sizes: odd channels, batch 1, stride 2
// and 3, padding, 1x1, kernels wider than the padding allows to be symmetric, non-square images.
// Which path StorageKernels takes follows oneDNN's ISA, and ctest runs this file again with
// ONEDNN_MAX_CPU_ISA capped at AVX512_CORE_BF16, AVX512_CORE and AVX2 (where the own kernels
// run). Leaves out cuda.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_isa.hpp"
#include "core/memory.hpp"
#include "core/rng.hpp"
#include "kernels/cpu/onednn_conv2d.hpp"
#include "kernels/storage_kernels.hpp"
#include "op_test_harness.hpp"
#include "precision/fp16.hpp"

namespace sb::kernels::testing {
namespace {

std::vector<float> random_floats(i64 n, std::uint64_t stream) {
  const CounterRng rng(13, stream);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) v[i] = static_cast<float>(rng.normal(i));
  return v;
}

// Values that bf16 holds exactly, so the fp32 reference sees the same operands.
std::vector<float> bf16_exact(i64 n, std::uint64_t stream) {
  std::vector<float> v = random_floats(n, stream);
  for (float& x : v) x = to_float(to_bf16(x));
  return v;
}

std::vector<bf16> as_bf16(const std::vector<float>& v) {
  std::vector<bf16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_bf16(v[i]);
  return out;
}

struct ConvCase {
  i64 N, C, H, W, OC, K, stride, pad;
  i64 OH() const { return (H + 2 * pad - K) / stride + 1; }
  i64 OW() const { return (W + 2 * pad - K) / stride + 1; }
  i64 inputs() const { return N * C * H * W; }
  i64 weights() const { return OC * C * K * K; }
  i64 outputs() const { return N * OC * OH() * OW(); }
  std::string text() const {
    return "N=" + std::to_string(N) + " C=" + std::to_string(C) + " " + std::to_string(H) + "x" + std::to_string(W) +
           " OC=" + std::to_string(OC) + " k=" + std::to_string(K) + " s=" + std::to_string(stride) +
           " p=" + std::to_string(pad);
  }
};

// The ResNet's own layers (first layer C=1, 3x3 same, 1x1 stride-2 shortcut, stride-2 3x3) and
// awkward ones around them.
const ConvCase kCases[] = {{2, 1, 28, 28, 16, 3, 1, 1}, {1, 16, 14, 14, 16, 3, 1, 1}, {3, 16, 14, 14, 32, 1, 2, 0},
                           {2, 16, 14, 14, 32, 3, 2, 1}, {1, 3, 7, 7, 5, 3, 1, 1},     {3, 5, 9, 8, 7, 3, 2, 1},
                           {1, 17, 5, 6, 3, 1, 1, 0},    {2, 3, 8, 8, 4, 5, 1, 2},     {1, 2, 6, 5, 3, 3, 2, 0},
                           {5, 7, 11, 11, 9, 4, 3, 1},   {1, 33, 4, 4, 17, 2, 1, 0},   {2, 64, 7, 7, 64, 3, 1, 1},
                           // more images than the weight gradient's 16 groups: groups of 1 and 2
                           // images, and of 2 and 3, run side by side
                           {20, 16, 14, 14, 16, 3, 1, 1}, {37, 3, 9, 8, 5, 3, 2, 1}};

struct Outputs {
  std::vector<double> out, dinp, dweight, dbias;
};

// Runs forward and backward (dinp and dbias only where asked) on fp32 operands with the
// accumulated outputs starting from fixed non-zero values: through the own cpu kernel table
// (reference) or oneDNN.
Outputs run_fp32(const ConvCase& c, bool onednn, bool with_dinp, bool with_bias) {
  const auto inp = random_floats(c.inputs(), 1), weight = random_floats(c.weights(), 2);
  const auto bias = random_floats(c.OC, 3), dout = random_floats(c.outputs(), 4);
  std::vector<float> out(c.outputs()), dinp = random_floats(c.inputs(), 5), dweight = random_floats(c.weights(), 6);
  std::vector<float> dbias = random_floats(c.OC, 7);
  const float* b = with_bias ? bias.data() : nullptr;
  float* di = with_dinp ? dinp.data() : nullptr;
  float* db = with_bias ? dbias.data() : nullptr;
  if (onednn) {
    MemoryTracker tracker;
    WideningScratch scratch(tracker, "test scratch");
    cpu::OnednnConv2d conv(scratch);
    conv.forward(out.data(), inp.data(), weight.data(), b, c.N, c.C, c.H, c.W, c.OC, c.K, c.K, c.stride, c.pad);
    conv.backward(di, dweight.data(), db, dout.data(), inp.data(), weight.data(), c.N, c.C, c.H, c.W, c.OC, c.K, c.K,
                  c.stride, c.pad);
  } else {
    const KernelTable& k = kernels_for(Backend::cpu);
    k.conv2d_forward(out.data(), inp.data(), weight.data(), b, c.N, c.C, c.H, c.W, c.OC, c.K, c.K, c.stride, c.pad);
    k.conv2d_backward(di, dweight.data(), db, dout.data(), inp.data(), weight.data(), c.N, c.C, c.H, c.W, c.OC, c.K,
                      c.K, c.stride, c.pad);
  }
  return {as_doubles(out), as_doubles(dinp), as_doubles(dweight), as_doubles(dbias)};
}

void expect_outputs_close(const Outputs& actual, const Outputs& expected, Tolerance activations, Tolerance gradients,
                          const std::string& shape) {
  expect_close("out", actual.out, expected.out, activations, shape);
  expect_close("dinp", actual.dinp, expected.dinp, activations, shape);
  expect_close("dweight", actual.dweight, expected.dweight, gradients, shape);
  expect_close("dbias", actual.dbias, expected.dbias, gradients, shape);
}

TEST(OnednnConv2d, Fp32MatchesTheOwnKernels) {
  for (const ConvCase& c : kCases)
    for (const bool with_dinp : {true, false})
      for (const bool with_bias : {true, false}) {
        const std::string shape = c.text() + (with_dinp ? " dinp" : "") + (with_bias ? " bias" : "");
        // fp32 sums of up to 576 products in another order, and dweight sums over N·OH·OW
        expect_outputs_close(run_fp32(c, true, with_dinp, with_bias), run_fp32(c, false, with_dinp, with_bias),
                             {1e-5, 1e-4}, {1e-5, 1e-3}, shape);
      }
}

// bf16 operands through StorageKernels<bf16> on the cpu (oneDNN bf16 where the CPU has bf16
// instructions, widened otherwise) against the own fp32 kernels on the same values: outputs
// rounded to bf16 once (half an ulp, 2^-9 relative, plus the sums' order), dinp summed with its
// old value in fp32 then rounded, fp32 parameter gradients.
TEST(OnednnConv2d, Bf16MatchesTheOwnKernelsOnTheSameValues) {
  MemoryTracker tracker;
  StorageKernels<bf16> storage(Backend::cpu, tracker);
  const KernelTable& k = kernels_for(Backend::cpu);
  for (const ConvCase& c : kCases) {
    const auto inp = bf16_exact(c.inputs(), 1), weight = bf16_exact(c.weights(), 2), bias = bf16_exact(c.OC, 3);
    const auto dout = bf16_exact(c.outputs(), 4), dinp0 = bf16_exact(c.inputs(), 5);
    const auto dweight0 = random_floats(c.weights(), 6), dbias0 = random_floats(c.OC, 7);

    std::vector<float> out(c.outputs()), dinp = dinp0, dweight = dweight0, dbias = dbias0;
    k.conv2d_forward(out.data(), inp.data(), weight.data(), bias.data(), c.N, c.C, c.H, c.W, c.OC, c.K, c.K,
                     c.stride, c.pad);
    k.conv2d_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(), c.N, c.C,
                      c.H, c.W, c.OC, c.K, c.K, c.stride, c.pad);

    const auto inp16 = as_bf16(inp), weight16 = as_bf16(weight), bias16 = as_bf16(bias), dout16 = as_bf16(dout);
    std::vector<bf16> out16(c.outputs()), dinp16 = as_bf16(dinp0);
    std::vector<float> dweight32 = dweight0, dbias32 = dbias0;
    storage.conv2d_forward(out16.data(), inp16.data(), weight16.data(), bias16.data(), c.N, c.C, c.H, c.W, c.OC, c.K,
                           c.K, c.stride, c.pad);
    storage.conv2d_backward(dinp16.data(), dweight32.data(), dbias32.data(), dout16.data(), inp16.data(),
                            weight16.data(), c.N, c.C, c.H, c.W, c.OC, c.K, c.K, c.stride, c.pad);
    const Tolerance rounded{1.0 / 256, 1e-3};
    expect_close("out", as_doubles(out16), as_doubles(out), rounded, c.text());
    expect_close("dinp", as_doubles(dinp16), as_doubles(dinp), rounded, c.text());
    expect_close("dweight", as_doubles(dweight32), as_doubles(dweight), {1e-5, 1e-3}, c.text());
    expect_close("dbias", as_doubles(dbias32), as_doubles(dbias), {1e-5, 1e-3}, c.text());
  }
}

std::vector<fp16> as_fp16(const std::vector<float>& v) {
  std::vector<fp16> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) out[i] = to_fp16(v[i]);
  return out;
}

// Values that fp16 holds exactly.
std::vector<float> fp16_exact(i64 n, std::uint64_t stream) {
  std::vector<float> v = random_floats(n, stream);
  for (float& x : v) x = to_float(to_fp16(x));
  return v;
}

// fp16 operands on the fp32 primitives (each activation laid out and widened in one pass, the
// results narrowed once, dinp summed in fp32 with its old value) against the own fp32 kernels on
// the same values: outputs within fp16's half ulp (2^-11 relative) and the sums' order. Every
// shape whose primitives take 16-channel blocks runs this path, the ResNet's 16-64-channel ones
// among them; the others leave everything unwritten and report it (StorageKernels widens).
TEST(OnednnConv2d, Fp16OperandsMatchTheOwnKernelsOnTheSameValues) {
  if (!onednn_runs_fp32_conv2d()) GTEST_SKIP() << "own kernels at ISA " << onednn_cpu_isa();
  const KernelTable& k = kernels_for(Backend::cpu);
  int laid_out = 0;
  for (const ConvCase& c : kCases) {
    const auto inp = fp16_exact(c.inputs(), 1), weight = fp16_exact(c.weights(), 2), bias = fp16_exact(c.OC, 3);
    const auto dout = fp16_exact(c.outputs(), 4), dinp0 = fp16_exact(c.inputs(), 5);
    const auto dweight0 = random_floats(c.weights(), 6), dbias0 = random_floats(c.OC, 7);
    std::vector<float> out(c.outputs()), dinp = dinp0, dweight = dweight0, dbias = dbias0;
    k.conv2d_forward(out.data(), inp.data(), weight.data(), bias.data(), c.N, c.C, c.H, c.W, c.OC, c.K, c.K,
                     c.stride, c.pad);
    k.conv2d_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(), c.N, c.C,
                      c.H, c.W, c.OC, c.K, c.K, c.stride, c.pad);

    MemoryTracker tracker;
    WideningScratch scratch(tracker, "test scratch");
    cpu::OnednnConv2d conv(scratch);
    const auto inp16 = as_fp16(inp), weight16 = as_fp16(weight), bias16 = as_fp16(bias), dout16 = as_fp16(dout);
    const std::vector<fp16> untouched(static_cast<std::size_t>(c.outputs()), fp16{0x7BFF});
    std::vector<fp16> out16 = untouched, dinp16 = as_fp16(dinp0);
    std::vector<float> dweight32 = dweight0, dbias32 = dbias0;
    const bool forward = conv.forward(out16.data(), inp16.data(), weight16.data(), bias16.data(), c.N, c.C, c.H, c.W,
                                      c.OC, c.K, c.K, c.stride, c.pad);
    const bool backward = conv.backward(dinp16.data(), dweight32.data(), dbias32.data(), dout16.data(), inp16.data(),
                                        weight16.data(), c.N, c.C, c.H, c.W, c.OC, c.K, c.K, c.stride, c.pad);
    if (c.C >= 16 && c.OC >= 16) {
      EXPECT_TRUE(forward) << c.text();
      EXPECT_TRUE(backward) << c.text();
    }
    const Tolerance rounded{1.0 / 1024, 1e-3};
    if (forward) {
      ++laid_out;
      expect_close("out", as_doubles(out16), as_doubles(out), rounded, c.text());
    } else {
      EXPECT_EQ(std::memcmp(out16.data(), untouched.data(), out16.size() * sizeof(fp16)), 0) << c.text();
    }
    if (backward) {
      expect_close("dinp", as_doubles(dinp16), as_doubles(dinp), rounded, c.text());
      expect_close("dweight", as_doubles(dweight32), as_doubles(dweight), {1e-5, 1e-3}, c.text());
      expect_close("dbias", as_doubles(dbias32), as_doubles(dbias), {1e-5, 1e-3}, c.text());
    } else {
      EXPECT_EQ(dweight32, dweight0) << c.text();
    }
  }
  EXPECT_GE(laid_out, 5);
}

// A shape's primitives are cached: the second call gives the first call's bits.
TEST(OnednnConv2d, RepeatedShapeGivesTheSameResult) {
  const ConvCase c{3, 5, 9, 8, 7, 3, 2, 1};
  EXPECT_EQ(run_fp32(c, true, true, true).dweight, run_fp32(c, true, true, true).dweight);
  MemoryTracker tracker;
  WideningScratch scratch(tracker, "test scratch");
  cpu::OnednnConv2d conv(scratch);
  const auto inp = random_floats(c.inputs(), 1), weight = random_floats(c.weights(), 2);
  std::vector<float> first(c.outputs()), second(c.outputs());
  conv.forward(first.data(), inp.data(), weight.data(), nullptr, c.N, c.C, c.H, c.W, c.OC, c.K, c.K, c.stride, c.pad);
  conv.forward(second.data(), inp.data(), weight.data(), nullptr, c.N, c.C, c.H, c.W, c.OC, c.K, c.K, c.stride,
               c.pad);
  EXPECT_EQ(first, second);
}

TEST(OnednnConv2d, StorageKernelsTakeThePathTheIsaAllows) {
  const std::string isa = onednn_cpu_isa();
  const bool avx512 = isa == "avx512" || isa == "avx512_bf16" || isa == "amx_bf16";
  EXPECT_EQ(onednn_runs_fp32_conv2d(), avx512) << isa;
  MemoryTracker tracker;
  EXPECT_EQ(StorageKernels<float>(Backend::cpu, tracker).onednn_convolutions(), avx512) << isa;
  EXPECT_FALSE(StorageKernels<float>(Backend::cpu, tracker).native_convolutions()) << isa;
  EXPECT_EQ(StorageKernels<bf16>(Backend::cpu, tracker).native_convolutions(), onednn_has_native_bf16()) << isa;
  EXPECT_FALSE(StorageKernels<fp16>(Backend::cpu, tracker).native_convolutions()) << isa;
  EXPECT_FALSE(StorageKernels<float>(Backend::reference, tracker).onednn_convolutions());
  EXPECT_EQ(conv2d_implementation("fp32"), avx512 ? "onednn" : "own") << isa;
  EXPECT_EQ(conv2d_implementation("bf16"),
            onednn_has_native_bf16() ? "onednn" : (avx512 ? "widened+onednn" : "widened+own"))
      << isa;
  EXPECT_EQ(conv2d_implementation("fp16"), avx512 ? "widened+onednn" : "widened+own") << isa;
}

// Where oneDNN runs the convolutions, its chosen kernels are jitted for the ISA it reports (not
// its reference loops) for every pass, bf16 ones where bf16 runs natively.
TEST(OnednnConv2d, PrimitivesRunOnTheReportedIsa) {
  if (!onednn_runs_fp32_conv2d()) GTEST_SKIP() << "own kernels at ISA " << onednn_cpu_isa();
  MemoryTracker tracker;
  WideningScratch scratch(tracker, "test scratch");
  cpu::OnednnConv2d conv(scratch);
  for (const ConvCase& c : {ConvCase{2, 16, 14, 14, 16, 3, 1, 1}, ConvCase{2, 16, 14, 14, 32, 1, 2, 0}}) {
    const auto inp = random_floats(c.inputs(), 1), weight = random_floats(c.weights(), 2);
    const auto dout = random_floats(c.outputs(), 3);
    std::vector<float> out(c.outputs()), dinp(c.inputs()), dweight(c.weights());
    conv.forward(out.data(), inp.data(), weight.data(), nullptr, c.N, c.C, c.H, c.W, c.OC, c.K, c.K, c.stride, c.pad);
    EXPECT_EQ(conv.last_implementation().find("ref"), std::string::npos) << c.text() << " " << conv.last_implementation();
    conv.backward(dinp.data(), dweight.data(), nullptr, dout.data(), inp.data(), weight.data(), c.N, c.C, c.H, c.W,
                  c.OC, c.K, c.K, c.stride, c.pad);
    EXPECT_EQ(conv.last_implementation().find("ref"), std::string::npos) << c.text() << " " << conv.last_implementation();
    if (!onednn_has_native_bf16()) continue;
    const auto inp16 = as_bf16(inp), weight16 = as_bf16(weight), dout16 = as_bf16(dout);
    std::vector<bf16> out16(c.outputs()), dinp16(c.inputs());
    conv.forward(out16.data(), inp16.data(), weight16.data(), nullptr, c.N, c.C, c.H, c.W, c.OC, c.K, c.K, c.stride,
                 c.pad);
    EXPECT_EQ(conv.last_implementation().find("ref"), std::string::npos) << c.text() << " " << conv.last_implementation();
    conv.backward(dinp16.data(), dweight.data(), nullptr, dout16.data(), inp16.data(), weight16.data(), c.N, c.C, c.H,
                  c.W, c.OC, c.K, c.K, c.stride, c.pad);
    EXPECT_EQ(conv.last_implementation().find("ref"), std::string::npos) << c.text() << " " << conv.last_implementation();
  }
}

}  // namespace
}  // namespace sb::kernels::testing

namespace sb::kernels::testing {
namespace {

// Data parallelism splits a batch across ranks: the ResNet's layers on 16 images give what two
// halves of 8 give, the same bits per image for out and dinp, and dweight and dbias up to the
// order in which the halves' sums are added (oneDNN's own reduction over 16 images and over 8
// differs by ~1e-4 here, which 5 SGD steps at dp 2 amplified to 6% of the update).
TEST(OnednnConv2d, HalvesOfABatchGiveTheWholeBatchsResults) {
  if (!onednn_runs_fp32_conv2d()) GTEST_SKIP() << "own kernels at ISA " << onednn_cpu_isa();
  MemoryTracker tracker;
  WideningScratch scratch(tracker, "test scratch");
  cpu::OnednnConv2d conv(scratch);
  for (const ConvCase& whole : {ConvCase{16, 1, 28, 28, 16, 3, 1, 1}, ConvCase{16, 16, 28, 28, 16, 3, 1, 1},
                                ConvCase{16, 16, 28, 28, 32, 3, 2, 1}, ConvCase{16, 16, 28, 28, 32, 1, 2, 0},
                                ConvCase{16, 32, 14, 14, 32, 3, 1, 1}, ConvCase{16, 32, 14, 14, 64, 3, 2, 1},
                                ConvCase{16, 32, 14, 14, 64, 1, 2, 0}, ConvCase{16, 64, 7, 7, 64, 3, 1, 1}}) {
    ConvCase half = whole;
    half.N = whole.N / 2;
    const auto inp = random_floats(whole.inputs(), 1), weight = random_floats(whole.weights(), 2);
    const auto dout = random_floats(whole.outputs(), 3);
    std::vector<float> out(whole.outputs()), dinp(whole.inputs()), dweight(whole.weights()), dbias(whole.OC);
    std::vector<float> out2 = out, dinp2 = dinp, dweight2 = dweight, dbias2 = dbias;
    const auto run = [&](const ConvCase& c, i64 first, float* o, float* di, float* dw, float* db) {
      const i64 in = first * c.C * c.H * c.W, on = first * c.OC * c.OH() * c.OW();
      conv.forward(o + on, inp.data() + in, weight.data(), nullptr, c.N, c.C, c.H, c.W, c.OC, c.K, c.K, c.stride,
                   c.pad);
      conv.backward(di + in, dw, db, dout.data() + on, inp.data() + in, weight.data(), c.N, c.C, c.H, c.W, c.OC, c.K,
                    c.K, c.stride, c.pad);
    };
    run(whole, 0, out.data(), dinp.data(), dweight.data(), dbias.data());
    run(half, 0, out2.data(), dinp2.data(), dweight2.data(), dbias2.data());
    run(half, half.N, out2.data(), dinp2.data(), dweight2.data(), dbias2.data());
    expect_close("out", as_doubles(out2), as_doubles(out), {0, 0}, whole.text());
    expect_close("dinp", as_doubles(dinp2), as_doubles(dinp), {0, 0}, whole.text());
    // 16 per-image partials (~30 each) added in another association: a few 1e-5 (oneDNN's own
    // reduction over 16 images against 8: up to 5e-4)
    expect_close("dweight", as_doubles(dweight2), as_doubles(dweight), {1e-5, 5e-5}, whole.text());
    expect_close("dbias", as_doubles(dbias2), as_doubles(dbias), {1e-5, 5e-5}, whole.text());
  }
}

}  // namespace
}  // namespace sb::kernels::testing
