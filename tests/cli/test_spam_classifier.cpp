// SPDX-License-Identifier: Apache-2.0
// The GPT as a spam classifier through `scalebench train`, read back from the HDF5 files: a
// few steps of gpt-nano on a small labelled SpamAssassin subset record loss and accuracy on the
// whole held-out test set (1209 messages); fine-tuning from a gpt-nano language-model checkpoint
// (State of the Union) loads its backbone bit for bit, keeps it there when frozen while the new
// head trains; refusals name the key or file. Leaves out whether pretraining pays in accuracy
// (suites/transfer.yaml, analysis/compression_report.py --transfer).
#include <gtest/gtest.h>

#include <cmath>

#include "cli_harness.hpp"
#include "io/checkpoint_file.hpp"
#include "io/results_reader.hpp"
#include "models/gpt/gpt_config.hpp"

namespace sb::testing {
namespace {

const std::string kNano = std::string(SB_SOURCE_DIR) + "/models/gpt/configs/gpt-nano-sotu.yaml";
const std::string kSpam = " --set data.dataset=spam-assassin --set data.train_samples=64 --set batch.global=16"
                          " --set eval_batches=2 --set threads=1 --set log_every=1000 --set warmup_steps=0";
constexpr std::int64_t kTestMessages = 1209;

class SpamClassifier : public ::testing::Test {
 protected:
  // One gpt-nano language-model checkpoint on State of the Union for every test (a second).
  static void SetUpTestSuite() {
    scratch_ = new Scratch("SpamClassifier");
    lm_ = scratch_->path("lm.ckpt.h5");
    const auto r = scratch_->run("train --config " + kNano + " --set steps=4 --set eval_batches=1 --set threads=1"
                                 " --set checkpoint.every=4 --set checkpoint.path=" + lm_.string() + " --out " +
                                 scratch_->path("lm.h5").string());
    ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  }
  static void TearDownTestSuite() { delete scratch_; }

  CommandResult classify(const std::string& name, const std::string& sets, int steps) const {
    return scratch_->run("train --config " + kNano + kSpam + " --set steps=" + std::to_string(steps) +
                         " --set eval_every=" + std::to_string(steps) + " --set checkpoint.every=" +
                         std::to_string(steps) + " --set checkpoint.path=" + path(name + ".ckpt.h5").string() + sets +
                         " --out " + path(name + ".h5").string());
  }
  std::filesystem::path path(const std::string& name) const { return scratch_->path(name); }

  static Scratch* scratch_;
  static std::filesystem::path lm_;
};
Scratch* SpamClassifier::scratch_ = nullptr;
std::filesystem::path SpamClassifier::lm_;

TEST_F(SpamClassifier, TrainsAndRecordsAccuracyOnTheWholeTestSet) {
  const auto r = classify("scratch", "", 12);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const auto out = path("scratch.h5");
  const std::string run = "/runs/gpt-nano";
  EXPECT_EQ(io::read_string_attribute(out, run, "dataset"), "spam-assassin");
  EXPECT_EQ(io::count_rows(out, run + "/steps"), 12);
  for (double loss : io::read_column(out, run + "/steps", "loss")) EXPECT_TRUE(std::isfinite(loss));
  const auto split = io::read_string_column(out, run + "/eval", "split");
  const auto accuracy = io::read_column(out, run + "/eval", "accuracy");
  const auto loss = io::read_column(out, run + "/eval", "loss");
  ASSERT_EQ(split, (std::vector<std::string>{"test", "train"}));
  // accuracy over all 1209 held-out messages, and over the 32 training messages of 2 batches
  EXPECT_NEAR(accuracy[0] * kTestMessages, std::round(accuracy[0] * kTestMessages), 1e-6);
  EXPECT_NEAR(accuracy[1] * 32, std::round(accuracy[1] * 32), 1e-9);
  EXPECT_GT(accuracy[0], 0.5);  // 69% of the test messages are ham
  EXPECT_TRUE(std::isfinite(loss[0]) && loss[0] > 0);
  EXPECT_EQ(io::read_number_attribute(out, run + "/summary", "final_accuracy"), accuracy[0]);
  // the checkpoint holds the GPT's parameters and the head's, weight (2, 64) and bias (2)
  const auto nano = gpt::gpt_config_by_name("gpt-nano");
  EXPECT_EQ(checkpoint_parameters(path("scratch.ckpt.h5")).size(),
            static_cast<std::size_t>(gpt::gpt_parameter_count(nano) + 2 * nano.channels + 2));
}

// data.test_samples: the first N test messages only, the same ones in every run; more than the
// 1209 is refused by name.
TEST_F(SpamClassifier, TestSamplesEvaluatesTheFirstMessagesOnly) {
  const auto r = classify("subset", " --set data.test_samples=100", 2);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const auto whole = classify("whole", "", 2);
  ASSERT_EQ(whole.exit_code, 0) << whole.stderr_text;
  const std::string run = "/runs/gpt-nano";
  const auto accuracy = io::read_column(path("subset.h5"), run + "/eval", "accuracy");
  const auto loss = io::read_column(path("subset.h5"), run + "/eval", "loss");
  const auto whole_loss = io::read_column(path("whole.h5"), run + "/eval", "loss");
  ASSERT_EQ(io::read_string_column(path("subset.h5"), run + "/eval", "split"), (std::vector<std::string>{"test", "train"}));
  EXPECT_NEAR(accuracy[0] * 100, std::round(accuracy[0] * 100), 1e-9);  // a count of 100 messages
  EXPECT_NE(loss[0], whole_loss[0]);   // fewer test messages
  EXPECT_EQ(loss[1], whole_loss[1]);   // the same training batches, and the same training
  const auto over = classify("bad", " --set data.test_samples=1210", 1);
  EXPECT_EQ(over.exit_code, 2);
  EXPECT_NE(over.stderr_text.find("data.test_samples 1210 exceeds the 1209 test messages of spam-assassin"),
            std::string::npos)
      << over.stderr_text;
}

TEST_F(SpamClassifier, FrozenBackboneIsTheLanguageModelsBitForBitWhileTheHeadTrains) {
  const auto r = classify("frozen", " --set finetune.from=" + lm_.string() + " --set finetune.freeze=backbone", 4);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const std::vector<float> lm = checkpoint_parameters(lm_), tuned = checkpoint_parameters(path("frozen.ckpt.h5"));
  ASSERT_EQ(tuned.size(), lm.size() + 2 * 64 + 2);
  for (std::size_t i = 0; i < lm.size(); ++i) ASSERT_EQ(tuned[i], lm[i]) << "backbone parameter " << i << " moved";
  const auto out = path("frozen.h5");
  EXPECT_EQ(io::read_number_attribute(out, "/runs/gpt-nano/summary", "frozen_parameters"),
            static_cast<double>(lm.size()));
  // step 0 (the language model's backbone with the fresh head, before any step) and step 4:
  // with the backbone fixed, the test loss moved because the head trained
  const auto step = io::read_column(out, "/runs/gpt-nano/eval", "step");
  const auto split = io::read_string_column(out, "/runs/gpt-nano/eval", "split");
  const auto loss = io::read_column(out, "/runs/gpt-nano/eval", "loss");
  ASSERT_EQ(step, (std::vector<double>{0, 0, 4, 4}));
  ASSERT_EQ(split[0], "test");
  ASSERT_EQ(split[2], "test");
  EXPECT_NE(loss[0], loss[2]);
}

// A classifier's own checkpoint holds its head: fine-tuning from it starts from the whole model,
// so its step-0 evaluation is the finished run's last one, bit for bit.
TEST_F(SpamClassifier, FineTuningFromAClassifierCheckpointLoadsItsHeadToo) {
  const auto base = classify("base", "", 2);
  ASSERT_EQ(base.exit_code, 0) << base.stderr_text;
  const auto r = classify("again", " --set finetune.from=" + path("base.ckpt.h5").string(), 1);
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const auto base_loss = io::read_column(path("base.h5"), "/runs/gpt-nano/eval", "loss");
  const auto again_loss = io::read_column(path("again.h5"), "/runs/gpt-nano/eval", "loss");
  const auto again_step = io::read_column(path("again.h5"), "/runs/gpt-nano/eval", "step");
  ASSERT_EQ(base_loss.size(), 2u);
  ASSERT_EQ(again_step, (std::vector<double>{0, 0, 1, 1}));
  EXPECT_EQ(again_loss[0], base_loss[0]);  // test split
  EXPECT_EQ(again_loss[1], base_loss[1]);  // train split
}

TEST_F(SpamClassifier, RefusalsNameTheKeyOrFile) {
  const auto bf16 = classify("bad", " --set precision.dtype=bf16", 1);
  EXPECT_EQ(bf16.exit_code, 2);
  EXPECT_NE(bf16.stderr_text.find("gpt-nano classifies spam-assassin in precision fp32 only, not bf16"),
            std::string::npos)
      << bf16.stderr_text;
  const auto int8 = classify("bad", " --set compress.quantize=int8", 1);
  EXPECT_EQ(int8.exit_code, 2);
  EXPECT_NE(int8.stderr_text.find("compress, prune and distill are not available for the spam-assassin classifier"),
            std::string::npos)
      << int8.stderr_text;
  const auto subset = classify("bad", " --set data.train_samples=5000", 1);
  EXPECT_EQ(subset.exit_code, 2);
  EXPECT_NE(subset.stderr_text.find("data.train_samples 5000 exceeds the 4837 training messages of spam-assassin"),
            std::string::npos)
      << subset.stderr_text;
  const auto missing = classify("bad", " --set data.path=" + path("no-such-folder").string(), 1);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.stderr_text.find("SpamAssassin data folder '" + path("no-such-folder").string() +
                                     "' does not exist"),
            std::string::npos)
      << missing.stderr_text;
  const auto tiny = classify("bad", " --set model=gpt-tiny --set finetune.from=" + lm_.string(), 1);
  EXPECT_EQ(tiny.exit_code, 2);
  EXPECT_NE(tiny.stderr_text.find("holds a gpt-nano, not the gpt-tiny this run needs"), std::string::npos)
      << tiny.stderr_text;
}

}  // namespace
}  // namespace sb::testing
