// SPDX-License-Identifier: Apache-2.0
// What scripts and job logs rely on: `train --out` never replaces a result file unless told
// (--force, --append), `inspect`, `status` and `run` answer in JSON with --json, and `predict`
// names the currency of its cost. Leaves out the progress line under mpirun
// (test_thread_allocation.cpp).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "io/results_reader.hpp"
#include "jobs/job_folder.hpp"

namespace sb::testing {
namespace {

const std::string kNano = "train --config " + std::string(SB_SOURCE_DIR) +
                          "/models/gpt/configs/gpt-nano-sotu.yaml --set steps=2 --set eval_batches=1 --set threads=1";

TEST(OutputContract, ExistingOutIsReplacedOnlyWithForceAndAddedToWithAppend) {
  Scratch scratch;
  const auto out = scratch.path("nano.h5");
  ASSERT_EQ(scratch.run(kNano + " --out " + out.string()).exit_code, 0);
  const CommandResult again = scratch.run(kNano + " --out " + out.string() + " --run-id second");
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_NE(again.stderr_text.find("exists: train never replaces a result file; add --force"), std::string::npos)
      << again.stderr_text;
  EXPECT_EQ(io::list_runs(out), std::vector<std::string>{"gpt-nano"}) << "the refused run left the file alone";
  ASSERT_EQ(scratch.run(kNano + " --out " + out.string() + " --run-id second --append").exit_code, 0);
  EXPECT_EQ(io::list_runs(out), (std::vector<std::string>{"gpt-nano", "second"}));
  ASSERT_EQ(scratch.run(kNano + " --out " + out.string() + " --run-id third --force").exit_code, 0);
  EXPECT_EQ(io::list_runs(out), std::vector<std::string>{"third"});

  const CommandResult inspected = scratch.run("inspect --json " + out.string());
  ASSERT_EQ(inspected.exit_code, 0) << inspected.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(inspected.stdout_text);
  EXPECT_EQ(j["schema_version"], 1);
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["id"], "third");
  EXPECT_EQ(j["runs"][0]["attributes"]["status"], "ok");
  EXPECT_EQ(j["runs"][0]["context"]["threads"], 1);
  EXPECT_EQ(j["runs"][0]["context"]["threads_source"], "config");
  EXPECT_TRUE(j["runs"][0]["summary"].contains("step_time_median_s"));
  EXPECT_TRUE(j["runs"][0]["prediction"].is_object());
}

TEST(OutputContract, RunJsonIsTheOnlyThingOnStdout) {
  Scratch scratch;
  const auto suite = scratch.write("mini.yaml", "suite: mini\nbase: {model: gpt-nano, data: sotu, steps: 2, eval_batches: 1,"
                                                " batch: 4, threads: 1}\ncases: [{name: one}]\n");
  const CommandResult r = scratch.run("run " + suite.string() + " --json --out " + scratch.path("res").string());
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);  // throws on anything else
  EXPECT_EQ(j["suite"], "mini");
  EXPECT_EQ(j["failures"], 0);
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["id"], "one");
  EXPECT_EQ(j["runs"][0]["status"], "ok");
  EXPECT_GT(j["runs"][0]["step_time_median_s"].get<double>(), 0);
  EXPECT_TRUE(j["runs"][0]["final_accuracy"].is_number() || j["runs"][0]["final_accuracy"].is_null());
  EXPECT_NE(r.stderr_text.find("== case 1/1: one"), std::string::npos) << "the cases' log goes to stderr";
}

TEST(OutputContract, StatusJsonListsEveryCase) {
  Scratch scratch;
  const jobs::SubmissionRecord record{.suite = "mini", .scheduler = "slurm", .site = "this-machine", .array = false,
                                      .cases = {{.id = "one", .file_id = "one", .job_id = ""}}};
  std::filesystem::create_directories(scratch.path("sub") / "jobs");
  jobs::write_record(scratch.path("sub"), record);
  const CommandResult r = scratch.run("status --json " + scratch.path("sub").string());
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(j["suite"], "mini");
  ASSERT_EQ(j["cases"].size(), 1u);
  EXPECT_EQ(j["cases"][0]["id"], "one");
  EXPECT_EQ(j["cases"][0]["job_state"], "not submitted");
  EXPECT_EQ(j["cases"][0]["result"], "missing");
}

TEST(OutputContract, PredictNamesTheCurrencyOfItsCost) {
  Scratch scratch;
  const std::string predict = "predict --config " + std::string(SB_SOURCE_DIR) +
                              "/models/gpt/configs/gpt-175b-megatron.yaml --site a100-80gb-dgx";
  const CommandResult text = scratch.run(predict);
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  EXPECT_NE(text.stdout_text.find(" USD per hour ("), std::string::npos) << text.stdout_text;
  const CommandResult json = scratch.run(predict + " --json");
  const nlohmann::json j = nlohmann::json::parse(json.stdout_text);
  EXPECT_EQ(j["currency"], "USD");
  EXPECT_GT(j["cost_per_hour"].get<double>(), 0);
}

}  // namespace
}  // namespace sb::testing
