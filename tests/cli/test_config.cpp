// SPDX-License-Identifier: Apache-2.0
// Config parsing, overrides, suite expansion, learning-rate schedule and the SOTU sampler.
#include <gtest/gtest.h>

#include <set>

#include <cstdlib>

#include "cli_harness.hpp"
#include "core/check.hpp"
#include "data/text_corpus.hpp"
#include "plan/config.hpp"
#include "train/lr_schedule.hpp"
#include "plan/suite.hpp"

namespace sb::train {
namespace {

TEST(Config, DefaultsAndNestedValues) {
  const auto root = plan::parse_yaml_text(
      "model: gpt-tiny\ndata: {dataset: sotu, path: /x}\nbatch: {global: 32, micro: 8}\n"
      "optimizer: {lr: 1e-3, schedule: cosine, min_lr: 1e-4}\nsteps: 7\n", "t.yaml");
  const plan::TrainConfig c = plan::parse_train_config(root, "t.yaml");
  EXPECT_EQ(c.model.name, "gpt-tiny");
  EXPECT_EQ(c.data.path, "/x");
  EXPECT_EQ(c.global_batch, 32);
  EXPECT_EQ(c.micro_batch, 8);
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 1e-3);
  EXPECT_DOUBLE_EQ(c.optimizer.beta2, 0.95);
  EXPECT_EQ(c.optimizer.schedule, "cosine");
  EXPECT_EQ(c.steps, 7);
  EXPECT_EQ(c.strategy.world_size(), 1);
  EXPECT_EQ(c.precision.dtype, "fp32");
}

TEST(Config, InlineModelAndOverrides) {
  YAML::Node root = plan::parse_yaml_text(
      "model: {layers: 3, hidden: 48, heads: 4, seq_len: 32, vocab: 256}\ndata: sotu\n", "t.yaml");
  plan::apply_override(root, "optimizer.lr=0.01", "t.yaml");
  plan::apply_override(root, "strategy.dp=1", "t.yaml");
  plan::apply_override(root, "steps=12", "t.yaml");
  const plan::TrainConfig c = plan::parse_train_config(root, "t.yaml");
  EXPECT_EQ(c.model.layers, 3);
  EXPECT_EQ(c.model.hidden, 48);
  EXPECT_EQ(c.model.name, "gpt-L3-C48-H4");
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.01);
  EXPECT_EQ(c.steps, 12);
  EXPECT_NE(c.yaml.find("lr: 0.01"), std::string::npos) << c.yaml;
}

// The stored config_yaml must read back the same in YAML 1.1 readers (PyYAML): there a plain
// 2:4 is the base-60 integer 124 and a plain 0.5 a float, so such strings stay quoted.
TEST(Config, StoredYamlQuotesWhatYaml11WouldReadAsANumber) {
  YAML::Node root = plan::parse_yaml_text(
      "model: resnet-mini\ndata: {dataset: mnist}\nprune: {pattern: \"2:4\"}\nseed: 3\n"
      "optimizer: {lr: 0.1}\nname: \"0.5\"\n", "t.yaml");
  plan::apply_override(root, "finetune.from=/x/base.ckpt.h5", "t.yaml");
  const std::string text = plan::yaml_text(root);
  EXPECT_NE(text.find("prune: {pattern: \"2:4\"}"), std::string::npos) << text;
  EXPECT_NE(text.find("name: \"0.5\""), std::string::npos) << text;
  EXPECT_NE(text.find("optimizer: {lr: 0.1}"), std::string::npos) << text;
  EXPECT_NE(text.find("seed: 3"), std::string::npos) << text;
  YAML::Node plain = plan::parse_yaml_text("pattern: 1:30\n", "t.yaml");
  EXPECT_EQ(plan::yaml_text(plain), "pattern: \"1:30\"");
  const YAML::Node back = plan::parse_yaml_text(text, "stored");
  EXPECT_EQ(back["prune"]["pattern"].as<std::string>(), "2:4");
  EXPECT_EQ(back["finetune"]["from"].as<std::string>(), "/x/base.ckpt.h5");
  EXPECT_EQ(plan::parse_train_config(root, "t.yaml").yaml, text);
}

TEST(Config, MessagesNameTheFileAndKey) {
  auto message = [](const std::string& text) {
    try {
      plan::parse_train_config(plan::parse_yaml_text(text, "case.yaml"), "case.yaml");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("model: gpt-nano\ndata: sotu\nstrategy: {zero: 5}\n"),
            "case.yaml: 'strategy.zero' must be 0, 1, 2 or 3, got 5");
  EXPECT_EQ(message("data: sotu\n"),
            "case.yaml: 'model' is missing (a name such as gpt-tiny, or a mapping with layers, hidden, heads, "
            "seq_len, vocab)");
  EXPECT_EQ(message("model: gpt-nano\ndata: sotu\nprecision: fp4\n"),
            "case.yaml: 'precision' is 'fp4' but must be one of: fp32, fp16, bf16, fp8");
  EXPECT_EQ(message("model: gpt-nano\ndata: sotu\nprecision: {dtype: bf16, main_grads: bf16}\n"),
            "case.yaml: 'precision.main_grads' is 'bf16' but must be one of: fp32, storage");
  EXPECT_EQ(plan::parse_train_config(plan::parse_yaml_text("model: gpt-nano\ndata: sotu\nprecision: {dtype: fp16, main_grads: storage}\n",
                                               "case.yaml"), "case.yaml").precision.main_grads,
            "storage");
  EXPECT_EQ(message("model: gpt-nano\ndata: {dataset: sotu, test_samples: 10}\n"),
            "case.yaml: 'data.test_samples' takes a subset of labelled test images or messages; sotu is an unlabelled "
            "text corpus");
  EXPECT_EQ(message("model: resnet-mini\ndata: {dataset: mnist, test_samples: -1}\n"),
            "case.yaml: 'data.test_samples' must be zero or positive, got -1");
  EXPECT_EQ(plan::parse_train_config(plan::parse_yaml_text("model: resnet-mini\ndata: {dataset: mnist, test_samples: 512}\n",
                                               "case.yaml"), "case.yaml").data.test_samples,
            512);
  EXPECT_EQ(message("- a\n- b\n"),
            "case.yaml: the config must be a mapping of keys to values (it is empty, a list or a single value)");
}

TEST(Config, CompressBlock) {
  auto message = [](const std::string& text) {
    try {
      plan::parse_train_config(plan::parse_yaml_text(text, "case.yaml"), "case.yaml");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const plan::TrainConfig off = plan::parse_train_config(plan::parse_yaml_text("model: gpt-nano\ndata: sotu\n", "c.yaml"), "c.yaml");
  EXPECT_EQ(off.compress.quantize, "none");
  const plan::TrainConfig on = plan::parse_train_config(
      plan::parse_yaml_text("model: gpt-nano\ndata: sotu\ncompress: {quantize: int8, calibration_batches: 3}\n", "c.yaml"),
      "c.yaml");
  EXPECT_EQ(on.compress.quantize, "int8");
  EXPECT_EQ(on.compress.calibration_batches, 3);
  EXPECT_EQ(message("model: gpt-nano\ndata: sotu\ncompress: {quantise: int8}\n"),
            "case.yaml: unknown key 'compress.quantise' (known: quantize, calibration_batches)");
  EXPECT_EQ(message("model: gpt-nano\ndata: sotu\ncompress: {quantize: int4}\n"),
            "case.yaml: 'compress.quantize' is 'int4' but must be one of: none, int8");
  EXPECT_EQ(message("model: gpt-nano\ndata: sotu\ncompress: {quantize: int8, calibration_batches: 0}\n"),
            "case.yaml: 'compress.calibration_batches' must be a positive integer, got 0");
  EXPECT_EQ(message("model: gpt-nano\ndata: sotu\nprecision: bf16\ncompress: {quantize: int8}\n"),
            "case.yaml: 'compress.quantize: int8' quantises an fp32 model, not precision bf16");
  EXPECT_EQ(message("model: gpt-nano\ndata: sotu\nstrategy: {tp: 2}\ncompress: {quantize: int8}\n"),
            "case.yaml: 'compress.quantize: int8' needs the whole model on each rank (strategy tp 1 and pp 1)");
}

TEST(LearningRate, WarmupThenCosineToMinimum) {
  plan::OptimizerSpec o;
  o.lr = 1.0;
  o.min_lr = 0.1;
  o.schedule = "cosine";
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 0, 4, 14), 0.25);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 3, 4, 14), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 4, 4, 14), 1.0);
  EXPECT_NEAR(learning_rate_at(o, 13, 4, 14), 0.1, 1e-12);
  EXPECT_NEAR(learning_rate_at(o, 8, 4, 14), 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI * 4 / 9)), 1e-12);
  o.schedule = "constant";
  EXPECT_DOUBLE_EQ(learning_rate_at(o, 13, 4, 14), 1.0);
}

TEST(Suite, MatrixTimesCasesWithIdsAndValidation) {
  sb::testing::Scratch scratch;
  const auto path = scratch.write("s.yaml",
                                  "suite: demo\nbase: {model: gpt-nano, data: sotu, steps: 3}\n"
                                  "matrix: {threads: [1, 2], optimizer.lr: [0.001, 0.01]}\n"
                                  "cases: [{name: a}, {name: b, steps: 5}]\n");
  const plan::Suite suite = plan::load_suite(path, {"eval_batches=2"});
  ASSERT_EQ(suite.cases.size(), 8u);
  EXPECT_EQ(suite.name, "demo");
  EXPECT_EQ(suite.cases[0].id, "a,threads=1,lr=0.001");
  EXPECT_EQ(suite.cases[7].id, "b,threads=2,lr=0.01");
  const plan::TrainConfig last = plan::parse_train_config(suite.cases[7].config, "x");
  EXPECT_EQ(last.steps, 5);
  EXPECT_EQ(last.threads, 2);
  EXPECT_DOUBLE_EQ(last.optimizer.lr, 0.01);
  EXPECT_EQ(last.eval_batches, 2);
  const auto bad = scratch.write("bad.yaml", "base: {model: gpt-nano, data: sotu}\nmatrix: {stepz: [1]}\n");
  EXPECT_THROW(plan::load_suite(bad, {}), UserError);
}

// finetune.from: run:<case> must name an earlier case (its checkpoint exists only once it ran).
TEST(Suite, FinetuneFromARunNamesAnEarlierCase) {
  sb::testing::Scratch scratch;
  const std::string base = "base: {model: resnet-mini, data: mnist}\ncases:\n";
  const auto good = scratch.write("good.yaml", base + "  - {name: dense, steps: 2}\n"
                                                      "  - {name: pruned, finetune: {from: 'run:dense'}, prune: {pattern: '2:4'}}\n");
  EXPECT_EQ(plan::load_suite(good, {}).cases.size(), 2u);
  const auto later = scratch.write("later.yaml", base + "  - {name: pruned, finetune: {from: 'run:dense'}}\n"
                                                        "  - {name: dense, steps: 2}\n");
  try {
    plan::load_suite(later, {});
    ADD_FAILURE() << "a reference to a later case was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("case 'pruned' starts from 'run:dense', which is not an earlier case"),
              std::string::npos)
        << e.what();
  }
}

// Every suite shipped in suites/ expands, and each of its cases parses and fits its grid.
TEST(Suite, EveryShippedSuiteIsValid) {
  int suites = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(SB_SOURCE_DIR) / "suites")) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const plan::Suite suite = plan::load_suite(entry.path(), {});
    EXPECT_FALSE(suite.cases.empty());
    for (const plan::SuiteCase& c : suite.cases) EXPECT_GE(c.world_size, 1);
    ++suites;
  }
  EXPECT_GE(suites, 2);  // quickstart and model-parallel at least
}

// The model-parallel suite covers what its issue names: tp 1/2/4, pp 2/4 × m 1/2/4/8 × both
// schedules, and the three 4-rank hybrids.
TEST(Suite, ModelParallelSuiteCoversTheGrid) {
  const plan::Suite suite = plan::load_suite(std::filesystem::path(SB_SOURCE_DIR) / "suites" / "model-parallel.yaml", {});
  std::set<std::string> seen;
  for (const plan::SuiteCase& c : suite.cases) {
    const plan::TrainConfig t = plan::parse_train_config(c.config, c.id);
    if (t.model.name != "gpt-tiny") continue;
    seen.insert(fmt::format("{}x{}x{} m{} {}", t.strategy.dp, t.strategy.tp, t.strategy.pp,
                            t.strategy.pp > 1 ? t.strategy.micro_batches : 0, t.strategy.pp > 1 ? t.strategy.schedule : ""));
  }
  for (int tp : {1, 2, 4}) EXPECT_TRUE(seen.count(fmt::format("1x{}x1 m0 ", tp))) << "tp " << tp;
  for (int pp : {2, 4})
    for (int m : {1, 2, 4, 8})
      for (const char* schedule : {"gpipe", "1f1b"})
        EXPECT_TRUE(seen.count(fmt::format("1x1x{} m{} {}", pp, m, schedule))) << pp << " " << m << " " << schedule;
  EXPECT_TRUE(seen.count("2x2x1 m0 "));
  EXPECT_TRUE(seen.count("2x1x2 m4 1f1b"));
  EXPECT_TRUE(seen.count("1x2x2 m4 1f1b"));
}

TEST(SotuCorpus, SplitAndDeterministicWindows) {
  const auto corpus = data::load_sotu(sb::testing::test_data_dir() / "sotu");
  EXPECT_EQ(corpus.all().size(), 10'761'413u + 232u);
  EXPECT_EQ(corpus.train().size() + corpus.heldout().size(), corpus.all().size());
  EXPECT_NEAR(static_cast<double>(corpus.heldout().size()) / static_cast<double>(corpus.all().size()), 0.1, 1e-6);
  const std::string start(corpus.all().begin(), corpus.all().begin() + 16);
  EXPECT_EQ(start, "Fellow-Citizens ");
  const data::WindowSampler a(corpus.train(), 4, 32, 7), b(corpus.train(), 4, 32, 7), c(corpus.train(), 4, 32, 8);
  std::vector<std::int32_t> ta(128), ya(128), tb(128), yb(128), tc(128), yc(128);
  a.training_batch(5, ta.data(), ya.data());
  b.training_batch(5, tb.data(), yb.data());
  c.training_batch(5, tc.data(), yc.data());
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  for (int i = 0; i + 1 < 32; ++i) EXPECT_EQ(ya[i], ta[i + 1]);  // targets are the next byte
  a.evaluation_batch(0, 3, ta.data(), ya.data());
  c.evaluation_batch(0, 3, tc.data(), yc.data());
  EXPECT_EQ(ta, tc);  // evaluation windows do not depend on the seed
}

}  // namespace
}  // namespace sb::train
