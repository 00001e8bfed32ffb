// SPDX-License-Identifier: Apache-2.0
// The ISA oneDNN dispatched to, read back from a bf16 run's context: the process's own ISA
// without a cap, and avx2 under ONEDNN_MAX_CPU_ISA=AVX2 (where the bf16 GEMMs widen to fp32), with
// the convolutions the cpu back-end runs at each precision (the own kernels under the AVX2 cap).
// Leaves out the kernels themselves (tests/kernels/test_onednn_bf16_matmul.cpp).
#include <gtest/gtest.h>

#include <string>

#include "cli_harness.hpp"
#include "core/cpu_isa.hpp"
#include "io/results_reader.hpp"

namespace sb::testing {
namespace {

const std::string kTrainBf16 = "train --config " + std::string(SB_SOURCE_DIR) +
                               "/models/gpt/configs/gpt-nano-sotu.yaml --set steps=2 --set eval_batches=1 "
                               "--set precision.dtype=bf16 --out ";

TEST(CpuIsaRecorded, Bf16RunRecordsTheIsaOneDnnDispatchesTo) {
  Scratch scratch;
  const auto out = scratch.path("native.h5");
  const CommandResult r = scratch.run_under("env -u ONEDNN_MAX_CPU_ISA -u DNNL_MAX_CPU_ISA", kTrainBf16 + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "cpu_isa"), onednn_cpu_isa());
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "onednn"), onednn_version());
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "conv2d_fp32"), conv2d_implementation("fp32"));
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "conv2d_bf16"), conv2d_implementation("bf16"));
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "int8_matmul"), int8_matmul_implementation());
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "matmul_bf16"), matmul_implementation("bf16"));
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "matmul_fp16"), matmul_implementation("fp16"));
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "fp16_convert"), fp16_conversion_implementation());
}

TEST(CpuIsaRecorded, CappedRunRecordsTheCap) {
  Scratch scratch;
  const auto out = scratch.path("avx2.h5");
  const CommandResult r = scratch.run_under("env ONEDNN_MAX_CPU_ISA=AVX2", kTrainBf16 + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "cpu_isa"), "avx2");
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "conv2d_fp32"), "own");
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "matmul_bf16"), "widened+openblas");
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "matmul_fp16"), "widened+openblas");
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "conv2d_bf16"), "widened+own");
  EXPECT_EQ(io::read_string_attribute(out, "/runs/gpt-nano/context", "int8_matmul"), "own");  // no VNNI at AVX2
}

}  // namespace
}  // namespace sb::testing
