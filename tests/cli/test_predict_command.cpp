// SPDX-License-Identifier: Apache-2.0
// `scalebench predict` as users and scripts meet it: the JSON contract, the human table, an
// impossible configuration's reason and exit code, and a broken site profile's message.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"

namespace sb::testing {
namespace {

const std::string kCase = std::string(SB_SOURCE_DIR) + "/models/gpt/configs/gpt-175b-megatron.yaml";
const std::string kSite = std::string(SB_SOURCE_DIR) + "/jobs/sites/a100-80gb-dgx.yaml";

TEST(PredictCommand, AnswersInJsonWithTheDesignFields) {
  Scratch scratch;
  const CommandResult r = scratch.run("predict --config " + kCase + " --site " + kSite + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(j["feasible"], true);
  for (const char* key : {"step_time_s", "compute_s", "comm_s", "bubble_s", "optimizer_s", "tokens_per_s",
                          "tflops_per_device", "mfu"})
    EXPECT_GT(j[key].get<double>(), 0.0) << key;
  EXPECT_LT(j["mfu"].get<double>(), 1.0);
  EXPECT_LT(j["memory_bytes"]["total"].get<double>(), 80.0 * 1024 * 1024 * 1024);
}

TEST(PredictCommand, HumanTableAndOverrides) {
  Scratch scratch;
  const CommandResult r =
      scratch.run("predict --config " + kCase + " --site " + kSite + " --set strategy.dp=32 --devices 2048");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("step time"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("on 2048 ×"), std::string::npos) << r.stdout_text;
}

TEST(PredictCommand, ImpossibleConfigurationGivesAReasonAndExitCodeOne) {
  Scratch scratch;
  const CommandResult r =
      scratch.run("predict --config " + kCase + " --site " + kSite + " --set strategy.dp=8 --set strategy.pp=1 --json");
  ASSERT_EQ(r.exit_code, 1) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(j["feasible"], false);
  EXPECT_NE(j["reason"].get<std::string>().find("needs"), std::string::npos) << j["reason"];
  EXPECT_TRUE(j["step_time_s"].is_null());
}

TEST(PredictCommand, BrokenSiteProfileIsOneSentence) {
  Scratch scratch;
  const auto site = scratch.write("site.yaml", "name: x\ndevice: y\ndevices_per_node: 8\ngpus: 8\n");
  const CommandResult r = scratch.run("predict --config " + kCase + " --site " + site.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("unknown key 'gpus'"), std::string::npos) << r.stderr_text;
}

}  // namespace
}  // namespace sb::testing
