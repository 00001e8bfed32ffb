// SPDX-License-Identifier: Apache-2.0
// Memory checked before allocation (train/memory_fit.hpp): the refusal's figures and margin,
// the host limit this machine reports, and `scalebench train` refusing a batch that cannot fit
// within seconds, exit 2, no result file.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "cli_harness.hpp"
#include "core/memory_limit.hpp"
#include "train/memory_fit.hpp"

namespace sb::testing {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

plan::TrainConfig config_from(const std::string& source) {
  plan::TrainConfig c;
  c.source = source;
  return c;
}

TEST(MemoryRefusal, NamesEveryCategoryTheLimitAndItsSource) {
  const plan::PredictedMemory predicted{.params = 1 * kGiB, .grads = 1 * kGiB, .optimizer = 2 * kGiB,
                                        .activations = 6 * kGiB};
  const std::string s = train::memory_refusal(config_from("case.yaml"), predicted, 1, {4 * kGiB, "the cgroup limit X"},
                                              "host h");
  EXPECT_NE(s.find("case.yaml"), std::string::npos) << s;
  EXPECT_NE(s.find("needs 10 GiB per rank"), std::string::npos) << s;
  EXPECT_NE(s.find("params 1 GiB, grads 1 GiB, optimizer 2 GiB, activations 6 GiB"), std::string::npos) << s;
  EXPECT_NE(s.find("host h has 4 GiB (the cgroup limit X)"), std::string::npos) << s;
}

TEST(MemoryRefusal, RanksOfOneHostShareItsLimit) {
  const plan::PredictedMemory predicted{.params = 0, .grads = 0, .optimizer = 0, .activations = 3 * kGiB};
  const MemoryLimit limit{8 * kGiB, "MemAvailable in /proc/meminfo"};
  EXPECT_EQ(train::memory_refusal(config_from("c"), predicted, 2, limit, "host h"), "");
  const std::string s = train::memory_refusal(config_from("c"), predicted, 4, limit, "host h");
  EXPECT_NE(s.find("12 GiB for its 4 ranks"), std::string::npos) << s;
}

TEST(MemoryRefusal, LetsARunWithinThePredictionMarginTry) {
  const MemoryLimit limit{100 * kGiB, "test"};
  const auto with = [](double gib) { return plan::PredictedMemory{.activations = gib * kGiB}; };
  EXPECT_EQ(train::memory_refusal(config_from("c"), with(104), 1, limit, "h"), "");  // 104 × 0.95 < 100
  EXPECT_NE(train::memory_refusal(config_from("c"), with(106), 1, limit, "h"), "");
  EXPECT_EQ(train::memory_refusal(config_from("c"), with(1e9), 1, {0, ""}, "h"), "") << "an unknown limit refuses nothing";
  EXPECT_EQ(train::memory_refusal(config_from("c"), with(0), 1, limit, "h"), "") << "nothing predicted";
}

TEST(HostMemoryLimit, ThisMachineReportsOneWithItsSource) {
  const MemoryLimit limit = host_memory_limit();
  EXPECT_GT(limit.bytes, 64.0 * 1024 * 1024);
  EXPECT_TRUE(limit.source.find("cgroup") != std::string::npos || limit.source.find("MemAvailable") != std::string::npos)
      << limit.source;
}

// The case: a gpt batch whose activations the cost model puts at ~10^15 bytes (10^9 sequences, within batch.global's bound of 2^32).
TEST(TrainMemoryCheck, AnImpossibleBatchIsRefusedWithTheFiguresBeforeAllocating) {
  Scratch scratch;
  const auto out = scratch.path("out.h5");
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = scratch.run("train --config " + std::string(SB_SOURCE_DIR) +
                                      "/models/gpt/configs/gpt-nano-sotu.yaml --out " + out.string() +
                                      " --set batch.global=1000000000");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 2) << r.stderr_text;
  EXPECT_LT(seconds, 10) << r.stderr_text;
  for (const char* figure : {"per rank (predicted: params ", "activations ", "GiB) but host ", "GiB ("})
    EXPECT_NE(r.stderr_text.find(figure), std::string::npos) << figure << " missing in: " << r.stderr_text;
  EXPECT_EQ(r.stderr_text.find("internal error"), std::string::npos) << r.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out)) << "a refused run leaves no result file";
}

}  // namespace
}  // namespace sb::testing
