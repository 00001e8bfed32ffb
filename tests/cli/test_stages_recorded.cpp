// SPDX-License-Identifier: Apache-2.0
// What a user checks to see that a prediction and a run describe the same thing: `train` of
// gpt2-124m at pp 2 on the cpu (one step, two ranks) records the stages and micro-batch plan
// that `predict --json` gives for the same config, in the run's attributes and in its stored
// prediction. Leaves out the plan's rules (tests/plan).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_harness.hpp"
#include "io/results_reader.hpp"

namespace sb::testing {
namespace {

const io::AttrValue& attribute(const io::Attributes& attributes, const std::string& name) {
  for (const auto& [key, value] : attributes)
    if (key == name) return value;
  throw std::runtime_error("no attribute " + name);
}

TEST(StagesRecorded, TrainRecordsTheStagesPredictGives) {
  Scratch scratch;
  // the tied 50304-row head costs ~5 blocks at T 64: the balanced split is [9, 3], not [6, 6]
  const auto config = scratch.write("gpt2.yaml",
                                    "model: gpt2-124m\ndata: {dataset: sotu}\nseq_len: 64\n"
                                    "batch: {global: 4, micro: 1}\nstrategy: {pp: 2}\nsteps: 1\n"
                                    "eval_batches: 1\nthreads: 1\n");
  const CommandResult predicted = scratch.run("predict --config " + config.string() + " --site this-machine --json");
  ASSERT_EQ(predicted.exit_code, 0) << predicted.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(predicted.stdout_text);
  const std::vector<std::int64_t> stages = j["stages"].get<std::vector<std::int64_t>>();
  EXPECT_EQ(stages, (std::vector<std::int64_t>{9, 3}));
  EXPECT_EQ(j["micro_batches"].get<std::int64_t>(), 4);
  EXPECT_EQ(j["micro_batch"].get<std::int64_t>(), 1);

  const auto out = scratch.path("gpt2.h5");
  const CommandResult trained = scratch.run_under(std::string(SB_MPIEXEC) + " --oversubscribe -np 2",
                                                  "train --config " + config.string() + " --out " + out.string());
  ASSERT_EQ(trained.exit_code, 0) << trained.stderr_text << trained.stdout_text;
  const io::Attributes run = io::read_attributes(out, "/runs/gpt2-124m");
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(attribute(run, "stages")), stages);
  EXPECT_EQ(std::get<std::string>(attribute(run, "stage_rule")), "balanced");
  EXPECT_EQ(std::get<std::int64_t>(attribute(run, "micro_batches")), 4);
  EXPECT_EQ(std::get<std::int64_t>(attribute(run, "micro_batch")), 1);
  const io::Attributes prediction = io::read_attributes(out, "/runs/gpt2-124m/prediction");
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(attribute(prediction, "stages")), stages);
  EXPECT_EQ(std::get<std::int64_t>(attribute(prediction, "micro_batches")), 4);
}

}  // namespace
}  // namespace sb::testing
