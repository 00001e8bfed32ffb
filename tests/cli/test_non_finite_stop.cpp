// SPDX-License-Identifier: Apache-2.0
// fp32 training that meets NaN or Inf stops at that step with one sentence naming the first
// layer where the values appeared; the run is marked failed with that reason in the results
// file, and the steps before it are kept. fp16 loss scaling's overflowed steps are skipped
// instead (tests/precision) and are not affected.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli_harness.hpp"
#include "io/results_reader.hpp"

namespace sb::testing {
namespace {

const char* kNano = "model: gpt-nano\ndata: {dataset: sotu}\nbatch: {global: 4}\nsteps: 4\nthreads: 1\n"
                    "eval_batches: 1\n";

struct Stopped {
  CommandResult result;
  std::string status, error;
  std::vector<double> steps;
};

Stopped train(Scratch& scratch, const std::string& extra) {
  const auto config = scratch.write("nano.yaml", kNano);
  const auto out = scratch.path("nano.h5");
  Stopped s;
  s.result = scratch.run("train --config " + config.string() + " --out " + out.string() + " " + extra);
  if (std::filesystem::exists(out)) {
    s.status = io::read_string_attribute(out, "/runs/gpt-nano", "status");
    s.error = io::read_string_attribute(out, "/runs/gpt-nano", "error");
    s.steps = io::read_column(out, "/runs/gpt-nano/steps", "step");
  }
  return s;
}

TEST(NonFiniteStop, InfiniteGradientsNameTheFirstTensorAndFailTheRun) {
  Scratch scratch;
  ::setenv("SB_INJECT_OVERFLOW", "3", 1);  // step 3's gradients become +inf (every element)
  const Stopped s = train(scratch, "");
  ::unsetenv("SB_INJECT_OVERFLOW");
  EXPECT_EQ(s.result.exit_code, 2) << s.result.stderr_text;
  const std::string expected = "step 3: non-finite values (inf) first appeared in the gradient of wte;";
  EXPECT_NE(s.result.stderr_text.find(expected), std::string::npos) << s.result.stderr_text;
  EXPECT_EQ(s.status, "failed");
  EXPECT_NE(s.error.find(expected), std::string::npos) << s.error;
  EXPECT_EQ(s.steps, (std::vector<double>{1, 2}));  // what was measured before the failure stays
}

TEST(NonFiniteStop, AbsurdLearningRateNamesTheFirstActivation) {
  Scratch scratch;
  // AdamW's first step moves every weight by about lr: 1e30 overflows the next forward
  const Stopped s = train(scratch, "--set optimizer.lr=1e30");
  EXPECT_EQ(s.result.exit_code, 2) << s.result.stderr_text;
  EXPECT_NE(s.result.stderr_text.find("step 2: non-finite values"), std::string::npos) << s.result.stderr_text;
  EXPECT_NE(s.result.stderr_text.find("first appeared in the forward activation "), std::string::npos)
      << s.result.stderr_text;
  EXPECT_NE(s.result.stderr_text.find("(training diverged: lower optimizer.lr?)"), std::string::npos);
  EXPECT_EQ(s.status, "failed");
  EXPECT_NE(s.error.find("step 2: non-finite values"), std::string::npos) << s.error;
  EXPECT_EQ(s.steps, (std::vector<double>{1}));
}

}  // namespace
}  // namespace sb::testing
