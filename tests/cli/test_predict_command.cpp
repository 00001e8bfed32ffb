// SPDX-License-Identifier: Apache-2.0
// `scalebench predict` as users and scripts meet it: the JSON contract, the human table, an
// impossible configuration's reason and exit code, a broken site profile's message, and
// `predict --validate` replaying a validation set (its rows, errors and summary in JSON).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "cli_harness.hpp"

namespace sb::testing {
namespace {

const std::string kCase = std::string(SB_SOURCE_DIR) + "/models/gpt/configs/gpt-175b-megatron.yaml";
const std::string kSite = std::string(SB_SOURCE_DIR) + "/jobs/sites/a100-80gb-dgx.yaml";
const std::string kH100 = std::string(SB_SOURCE_DIR) + "/jobs/sites/h100-sxm-dgx.yaml";

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

TEST(PredictCommand, MfuNamesItsConventionAndTheDensePeakWithItsSource) {
  Scratch scratch;
  const CommandResult r = scratch.run("predict --config " + kCase + " --site " + kSite + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  EXPECT_NE(j["mfu_convention"].get<std::string>().find("recomputation not counted"), std::string::npos);
  EXPECT_GE(j["hfu"].get<double>(), j["mfu"].get<double>());
  const std::string precision = j["peak_flops_precision"].get<std::string>();
  EXPECT_DOUBLE_EQ(j["peak_flops"].get<double>(), precision == "fp32" ? 19.5e12 : 312e12) << precision;
  const std::string source = j["peak_flops_source"].get<std::string>();
  EXPECT_NE(source.find("A100 Tensor Core GPU datasheet"), std::string::npos) << source;
  EXPECT_NE(source.find("peak_flops." + precision + ", dense"), std::string::npos) << source;
  EXPECT_FALSE(j["tp_algorithm"].get<std::string>().empty());
  // the band: the step time scaled by the residual range of the 76 shipped A100 rows
  const nlohmann::json& band = j["band"];
  ASSERT_TRUE(band.is_object()) << j.dump();
  EXPECT_EQ(band["rows"].get<int>(), 76);
  EXPECT_NEAR(band["step_time_low_s"].get<double>(),
              j["step_time_s"].get<double>() * band["low_ratio"].get<double>(), 1e-12);
  EXPECT_NEAR(band["step_time_high_s"].get<double>(),
              j["step_time_s"].get<double>() * band["high_ratio"].get<double>(), 1e-12);
  EXPECT_LT(band["step_time_low_s"].get<double>(), band["step_time_high_s"].get<double>());
}

TEST(PredictCommand, ASiteWithoutADensePeakForThePrecisionIsRefusedNotDefaulted) {
  Scratch scratch;
  std::string text = read_text(kSite);
  const auto at = text.find("  fp16: ");
  ASSERT_NE(at, std::string::npos);
  text.erase(at, text.find('\n', at) + 1 - at);
  const auto site = scratch.write("no-fp16.yaml", text);
  const CommandResult r = scratch.run("predict --config " + kCase + " --site " + site.string() +
                                      " --set precision=fp16 --json");
  EXPECT_EQ(r.exit_code, 2) << r.stdout_text;
  EXPECT_NE(r.stderr_text.find("'peak_flops.fp16' is missing"), std::string::npos) << r.stderr_text;
}

// A user's GPU profile without a `gemm:` model (or calibration) predicts at the datasheet peak:
// the answer says so in JSON (`calibrated` false) and in the table, which names the way out; the
// shipped profiles all carry one, also the H200 that no published run covers.
TEST(PredictCommand, AGpuSiteWithoutAGemmModelSaysItsComputeIsAnUpperBound) {
  Scratch scratch;
  const auto site = scratch.write("no-gemm.yaml", site_profile_without(kH100, "gemm"));
  const std::string h200 = std::string(SB_SOURCE_DIR) + "/jobs/sites/h200-sxm-hgx.yaml";
  const std::string bare = "predict --config " + kCase + " --site " + site.string() + " --set strategy.dp=32";
  const CommandResult j = scratch.run(bare + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.stderr_text;
  EXPECT_EQ(nlohmann::json::parse(j.stdout_text)["calibrated"], false) << j.stdout_text;
  const CommandResult table = scratch.run(bare);
  ASSERT_EQ(table.exit_code, 0) << table.stderr_text;
  EXPECT_NE(table.stdout_text.find("efficiency 1.000, not calibrated: the datasheet peak, an upper bound"),
            std::string::npos) << table.stdout_text;
  const CommandResult shipped = scratch.run("predict --config " + kCase + " --site " + h200 +
                                            " --set strategy.dp=32 --json");
  ASSERT_EQ(shipped.exit_code, 0) << shipped.stderr_text;
  const nlohmann::json s = nlohmann::json::parse(shipped.stdout_text);
  EXPECT_EQ(s["calibrated"], true);
  const nlohmann::json unfitted = nlohmann::json::parse(j.stdout_text);
  EXPECT_GT(s["step_time_s"].get<double>(), unfitted["step_time_s"].get<double>());  // at e_max < 1, slower
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

// Two published runs: one A100 row with an assumption, one H100 row; figures are the fixture's.
const char* kFixtureSet = R"(format: scalebench-validation-set
version: 1
name: fixture
source: test fixture
columns: {id: row name}
rows:
  - id: a100-row
    source: fixture row 1
    device: NVIDIA A100-SXM4-80GB
    gpus: 64
    case:
      model: {layers: 24, hidden: 2048, heads: 16, seq_len: 2048, vocab: 51200}
      strategy: {dp: 16, tp: 4, pp: 1, recompute: full}
      batch: {global: 256}
    assumed: {precision: bf16, batch.micro: 2}
    published: {tflops_per_device: 150, percent_of_peak: 48}
  - id: h100-row
    source: fixture row 2
    device: NVIDIA H100-SXM5-80GB
    gpus: 8
    case:
      model: llama3-8b
      strategy: {dp: 8, zero: 3, recompute: full}
      precision: bf16
      batch: {global: 64, micro: 2}
    published: {tokens_per_s_per_device: 3000, mfu_percent: 40, parameters: 8030261248}
)";

TEST(PredictCommand, ValidateReplaysEveryRowThroughThePredictionAndSummarises) {
  Scratch scratch;
  const auto set = scratch.write("set.yaml", kFixtureSet);
  const CommandResult r = scratch.run("predict --validate " + set.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  EXPECT_EQ(j["name"], "fixture");
  EXPECT_EQ(j["version"], 1);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_EQ(j["rows"][0]["site"], "a100-80gb-dgx");
  EXPECT_EQ(j["rows"][1]["site"], "h100-sxm-dgx");
  for (const auto& row : j["rows"]) {
    ASSERT_EQ(row["feasible"], true) << row;
    for (const auto& f : row["figures"]) {
      const double published = f["published"], predicted = f["predicted"], error = f["error_pct"];
      EXPECT_GT(predicted, 0.0) << f;
      EXPECT_NEAR(error, 100.0 * (predicted - published) / published, 1e-9) << f;
    }
  }
  // the llama3-8b parameter count is exact
  EXPECT_EQ(j["rows"][1]["figures"][2]["figure"], "parameters");
  EXPECT_EQ(j["rows"][1]["figures"][2]["predicted"].get<double>(), 8030261248.0);

  // the A100 row predicts what `predict --config` predicts for the same case on the same site
  const auto case_file = scratch.write("case.yaml", R"(model: {layers: 24, hidden: 2048, heads: 16, seq_len: 2048, vocab: 51200}
strategy: {dp: 16, tp: 4, pp: 1, recompute: full}
batch: {global: 256, micro: 2}
precision: bf16
)");
  const CommandResult single = scratch.run("predict --config " + case_file.string() + " --site a100-80gb-dgx --json");
  ASSERT_EQ(single.exit_code, 0) << single.stderr_text;
  const nlohmann::json p = nlohmann::json::parse(single.stdout_text);
  EXPECT_DOUBLE_EQ(j["rows"][0]["figures"][0]["predicted"].get<double>(), p["tflops_per_device"].get<double>());

  // per figure: the rows publishing it, mean and max |error| over them
  ASSERT_EQ(j["summary"].size(), 5u);
  EXPECT_NE(j["mfu_convention"].get<std::string>().find("dense peak"), std::string::npos);
  for (const auto& s : j["summary"]) {
    double sum = 0, max = 0;
    int n = 0;
    for (const auto& row : j["rows"])
      for (const auto& f : row["figures"])
        if (f["figure"] == s["figure"]) {
          sum += std::fabs(f["error_pct"].get<double>());
          max = std::max(max, std::fabs(f["error_pct"].get<double>()));
          ++n;
        }
    EXPECT_EQ(s["rows"], n) << s;
    EXPECT_NEAR(s["mean_abs_error_pct"].get<double>(), sum / n, 1e-9) << s;
    EXPECT_NEAR(s["max_abs_error_pct"].get<double>(), max, 1e-9) << s;
  }

  // the human table names each row and the summary
  const CommandResult human = scratch.run("predict --validate " + set.string());
  ASSERT_EQ(human.exit_code, 0) << human.stderr_text;
  EXPECT_NE(human.stdout_text.find("a100-row"), std::string::npos) << human.stdout_text;
  EXPECT_NE(human.stdout_text.find("mean |error|"), std::string::npos) << human.stdout_text;
}

// memory_gib: the most loaded rank's bytes over 2^30, as `predict --config` counts them; answered
// also for a row the profile's device is too small for (refused for memory, the row infeasible);
// a fit has nothing to fit on rows that publish only memory.
TEST(PredictCommand, ValidateAnswersMemoryAlsoWhereTheProfilesDeviceIsTooSmall) {
  Scratch scratch;
  const auto set = scratch.write("memory.yaml", R"(format: scalebench-validation-set
version: 1
name: memory-fixture
source: test fixture
columns: {id: row name}
rows:
  - id: fits
    source: fixture row 1
    device: NVIDIA H100-SXM5-80GB
    gpus: 8
    case:
      model: {name: llama3-8b, attention: flash, cross_entropy: unfused}
      strategy: {dp: 8, zero: 3, recompute: full}
      precision: bf16
      batch: {global: 8, micro: 1}
    published: {memory_gib: 40}
  - id: too-big
    source: fixture row 2
    device: NVIDIA H100-SXM5-80GB
    gpus: 1
    case:
      model: {name: llama3-8b, attention: flash}
      precision: bf16
      batch: {global: 1, micro: 1}
    published: {memory_gib: 150}
)");
  const CommandResult r = scratch.run("predict --validate " + set.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  ASSERT_EQ(j["rows"].size(), 2u);
  EXPECT_TRUE(j["rows"][0]["feasible"].get<bool>());
  const auto case_file = scratch.write("case.yaml", R"(model: {name: llama3-8b, attention: flash, cross_entropy: unfused}
strategy: {dp: 8, zero: 3, recompute: full}
precision: bf16
batch: {global: 8, micro: 1}
)");
  const CommandResult single = scratch.run("predict --config " + case_file.string() + " --site h100-sxm-dgx --json");
  ASSERT_EQ(single.exit_code, 0) << single.stderr_text;
  const nlohmann::json p = nlohmann::json::parse(single.stdout_text);
  EXPECT_GT(p["memory_bytes"]["comm"].get<double>(), 0.0) << p["memory_bytes"];
  EXPECT_DOUBLE_EQ(j["rows"][0]["figures"][0]["predicted"].get<double>(),
                   p["memory_bytes"]["total"].get<double>() / (1024.0 * 1024.0 * 1024.0));
  // 8B parameters at 18 bytes each, unsharded, on one 80 GB H100
  const nlohmann::json& big = j["rows"][1];
  EXPECT_FALSE(big["feasible"].get<bool>());
  EXPECT_NE(big["reason"].get<std::string>().find("needs"), std::string::npos) << big;
  EXPECT_GT(big["figures"][0]["predicted"].get<double>(), 8.03e9 * 18 / (1024.0 * 1024.0 * 1024.0)) << big;
  ASSERT_EQ(j["summary"].size(), 1u);
  EXPECT_EQ(j["summary"][0]["figure"], "memory_gib");
  EXPECT_EQ(j["summary"][0]["rows"], 2);
  EXPECT_EQ(j["summary"][0]["infeasible"], 0);
  // the table prints the too-big row's memory beside the reason it is refused
  const CommandResult human = scratch.run("predict --validate " + set.string());
  ASSERT_EQ(human.exit_code, 0) << human.stderr_text;
  const std::size_t figure = human.stdout_text.find("too-big                h100-sxm-dgx         memory_gib");
  EXPECT_NE(figure, std::string::npos) << human.stdout_text;
  EXPECT_GT(human.stdout_text.find("infeasible: needs"), figure) << human.stdout_text;
  const CommandResult fit = scratch.run("predict --fit " + set.string());
  EXPECT_EQ(fit.exit_code, 2);
  EXPECT_NE(fit.stderr_text.find("no row publishes a figure its step time decides"), std::string::npos)
      << fit.stderr_text;
}

TEST(PredictCommand, ValidateRefusesARowWhoseDeviceNoSiteHas) {
  Scratch scratch;
  std::string text = kFixtureSet;
  text.replace(text.find("NVIDIA H100-SXM5-80GB"), 21, "NVIDIA B200");
  const auto set = scratch.write("set.yaml", text);
  const CommandResult r = scratch.run("predict --validate " + set.string() + " --json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("row 'h100-row': no site profile has device 'NVIDIA B200'"), std::string::npos)
      << r.stderr_text;
}

TEST(PredictCommand, ValidateRefusesAnUnknownFigureAndAnotherVersion) {
  Scratch scratch;
  std::string text = kFixtureSet;
  text.replace(text.find("mfu_percent"), 11, "mfu_percnt");
  CommandResult r = scratch.run("predict --validate " + scratch.write("figure.yaml", text).string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("row 'h100-row': unknown published figure 'mfu_percnt'"), std::string::npos)
      << r.stderr_text;
  text = kFixtureSet;
  text.replace(text.find("version: 1"), 10, "version: 2");
  r = scratch.run("predict --validate " + scratch.write("version.yaml", text).string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stderr_text.find("version 2 of the validation-set format"), std::string::npos) << r.stderr_text;
}

TEST(PredictCommand, ValidateReplaysTheShippedSetsByName) {
  Scratch scratch;
  for (const char* name : {"megatron-lm-narayanan2021-table1", "llm-foundry-mpt-benchmarks"}) {
    const CommandResult r = scratch.run(std::string("predict --validate ") + name + " --json");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.stderr_text;
    const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
    EXPECT_EQ(j["name"], name);
    EXPECT_GE(j["rows"].size(), 10u) << name;
    int feasible = 0;
    for (const auto& row : j["rows"]) {
      // an infeasible replay says why and predicts nothing
      if (row["feasible"] == true) ++feasible;
      else EXPECT_FALSE(row["reason"].get<std::string>().empty()) << row;
      for (const auto& f : row["figures"]) EXPECT_EQ(f["predicted"].is_null(), row["feasible"] == false) << row;
    }
    // every row fits since the MPT rows state FlashAttention (model.attention: flash)
    EXPECT_EQ(feasible, static_cast<int>(j["rows"].size())) << name;
  }
}

// predict --fit prints the fitted e_max per device and writes nothing; --write-site writes a
// profile copy whose e_max names the set, and that copy loads; a folder receives SITE.yaml.
TEST(PredictCommand, FitPrintsEmaxPerDeviceAndWritesOnlyWhenAsked) {
  Scratch scratch;
  const CommandResult r = scratch.run("predict --fit llm-foundry-mpt-benchmarks --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  ASSERT_EQ(j["fits"].size(), 2u);  // A100 and H100 rows
  for (const auto& f : j["fits"]) {
    EXPECT_GT(f["e_max"].get<double>(), 0.2) << f;
    EXPECT_LE(f["e_max"].get<double>(), 1.0) << f;
    EXPECT_LE(f["mean_abs_error_pct"].get<double>(), f["shipped_mean_abs_error_pct"].get<double>() + 1e-9) << f;
  }
  const auto out = scratch.path("a100.yaml");
  const CommandResult w =
      scratch.run("predict --fit megatron-lm-narayanan2021-table1 --write-site " + out.string());
  ASSERT_EQ(w.exit_code, 0) << w.stderr_text;
  const std::string text = read_text(out);
  EXPECT_NE(text.find("# fitted by predict --fit on megatron-lm-narayanan2021-table1 version 1"), std::string::npos)
      << text;
  // Table 1's models have ten widths: k_overhead is fitted and written beside e_max
  EXPECT_NE(text.find("k_overhead: "), std::string::npos) << text;
  const CommandResult folder = scratch.run("predict --fit llm-foundry-mpt-benchmarks --write-site " + out.string());
  EXPECT_EQ(folder.exit_code, 2) << folder.stderr_text;
  EXPECT_NE(folder.stderr_text.find("must be an existing folder"), std::string::npos) << folder.stderr_text;
  // an existing folder receives SITE.yaml, for one device as for several
  const auto sites = scratch.path("sites");
  std::filesystem::create_directories(sites);
  const CommandResult one = scratch.run("predict --fit nvidia-dgxc-benchmarking-gpt3-175b --write-site " + sites.string());
  ASSERT_EQ(one.exit_code, 0) << one.stderr_text;
  EXPECT_TRUE(std::filesystem::exists(sites / "h100-sxm-dgx.yaml"));
}

// fp8 is predicted on a device with an fp8 peak and a fitted e_max_fp8, against that peak; a
// device without one is refused by name; the trainer refuses fp8 and writes nothing.
TEST(PredictCommand, FpEightIsPredictedWhereTheDeviceHasItAndTheTrainerRefusesIt) {
  Scratch scratch;
  const auto config = scratch.write(
      "fp8.yaml", "model: {layers: 4, hidden: 1024, heads: 8, seq_len: 1024, vocab: 50304, attention: flash}\n"
                  "data: sotu\nstrategy: {dp: 8}\nprecision: fp8\nbatch: {global: 64, micro: 8}\n");
  const CommandResult p = scratch.run("predict --config " + config.string() + " --site " + kH100 + " --json");
  ASSERT_EQ(p.exit_code, 0) << p.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(p.stdout_text);
  EXPECT_EQ(j["peak_flops_precision"], "fp8") << j;
  EXPECT_DOUBLE_EQ(j["peak_flops"].get<double>(), 1979.0e12) << j;
  const CommandResult a100 = scratch.run("predict --config " + config.string() + " --site " + kSite);
  EXPECT_EQ(a100.exit_code, 2) << a100.stderr_text;
  EXPECT_NE(a100.stderr_text.find("'peak_flops.fp8' is not given"), std::string::npos) << a100.stderr_text;
  const CommandResult t =
      scratch.run("train --config " + config.string() + " --out " + scratch.path("fp8.h5").string());
  EXPECT_EQ(t.exit_code, 2) << t.stderr_text;
  EXPECT_NE(t.stderr_text.find("precision fp8"), std::string::npos) << t.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(scratch.path("fp8.h5")));
}

// --fit with --validate replays the held-out set on the efficiencies fitted on the others: the
// MPT-fitted A100 e_max and k_overhead differ from the shipped (Megatron-fitted) ones, so every
// Megatron row's predicted TFLOP/s moves from its prediction on the shipped profile, and the
// JSON says what was fitted.
TEST(PredictCommand, FitWithValidateReplaysTheHeldOutSetOnTheFittedEfficiency) {
  Scratch scratch;
  const CommandResult held = scratch.run(
      "predict --fit llm-foundry-mpt-benchmarks --validate megatron-lm-narayanan2021-table1 --json");
  ASSERT_EQ(held.exit_code, 0) << held.stderr_text;
  const CommandResult shipped = scratch.run("predict --validate megatron-lm-narayanan2021-table1 --json");
  ASSERT_EQ(shipped.exit_code, 0) << shipped.stderr_text;
  const nlohmann::json h = nlohmann::json::parse(held.stdout_text), s = nlohmann::json::parse(shipped.stdout_text);
  double a100_e_max = 0;
  for (const auto& f : h["fitted_on"]["fits"]) {
    if (f["device"] != "NVIDIA A100-SXM4-80GB") continue;
    a100_e_max = f["e_max"].get<double>();
    EXPECT_NE(a100_e_max, f["shipped_e_max"].get<double>()) << f;
    // MPT's six models have six widths: k_overhead is fitted with e_max
    EXPECT_TRUE(f["k_overhead_fitted"].get<bool>()) << f;
    EXPECT_NE(f["k_overhead"].get<double>(), f["shipped_k_overhead"].get<double>()) << f;
  }
  ASSERT_GT(a100_e_max, 0.0) << h["fitted_on"];
  ASSERT_EQ(h["rows"].size(), s["rows"].size());
  for (std::size_t i = 0; i < h["rows"].size(); ++i) {
    const auto& held_row = h["rows"][i]["figures"][0];
    const auto& shipped_row = s["rows"][i]["figures"][0];
    ASSERT_EQ(held_row["figure"], "tflops_per_device");
    EXPECT_GT(std::fabs(held_row["predicted"].get<double>() / shipped_row["predicted"].get<double>() - 1), 1e-4)
        << h["rows"][i];
  }
  EXPECT_NE(h["fitted_on"]["sets"].get<std::string>().find("llm-foundry-mpt-benchmarks version 1"), std::string::npos);
}

// --cross-validate leaves each set out of a fit on the others: Megatron's A100 rows, held out of
// a fit on MPT's, are what `--fit MPT --validate Megatron` answers; MPT's held out of Megatron's
// A100 fit are replayed where the fit covers them and named where it does not (its H100 rows:
// no other set fits that device with sm80 kernels); torchtitan's rows publish memory only and
// are held out whatever is fitted. One set alone, or with --validate, is refused.
TEST(PredictCommand, CrossValidateLeavesEachSetOutOfAFitOnTheOthers) {
  Scratch scratch;
  const std::string megatron = "megatron-lm-narayanan2021-table1", mpt = "llm-foundry-mpt-benchmarks",
                    titan = "pytorch-torchtitan-llama3-h100-202412";
  const CommandResult r = scratch.run("predict --cross-validate " + megatron + "," + mpt + "," + titan + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.stderr_text;
  const nlohmann::json j = nlohmann::json::parse(r.stdout_text);
  ASSERT_EQ(j["held_out"].size(), 3u);
  const CommandResult pair = scratch.run("predict --fit " + mpt + "," + titan + " --validate " + megatron + " --json");
  ASSERT_EQ(pair.exit_code, 0) << pair.stderr_text;
  const nlohmann::json expected = nlohmann::json::parse(pair.stdout_text);
  const nlohmann::json& held = j["held_out"][0];
  EXPECT_EQ(held["name"], megatron);
  EXPECT_TRUE(held["not_held_out"].empty()) << held["not_held_out"];
  EXPECT_EQ(held["rows"], expected["rows"]);
  EXPECT_EQ(held["summary"], expected["summary"]);
  EXPECT_EQ(held["fitted_on"]["fits"], expected["fitted_on"]["fits"]);

  const nlohmann::json& mpt_held = j["held_out"][1];
  int a100_rows = 0;
  for (const auto& row : mpt_held["rows"]) {
    EXPECT_EQ(row["site"], "a100-80gb-dgx") << row;
    ++a100_rows;
  }
  EXPECT_EQ(a100_rows, 6);
  ASSERT_EQ(mpt_held["not_held_out"].size(), 5u) << mpt_held["not_held_out"];
  for (const auto& id : mpt_held["not_held_out"]) EXPECT_NE(id.get<std::string>().find("-h100"), std::string::npos) << id;

  const nlohmann::json& titan_held = j["held_out"][2];
  EXPECT_EQ(titan_held["rows"].size(), 6u);
  EXPECT_TRUE(titan_held["not_held_out"].empty());

  EXPECT_EQ(mpt_held["summary_by_site"].size(), 1u) << mpt_held["summary_by_site"];
  EXPECT_TRUE(mpt_held["summary_by_site"].contains("a100-80gb-dgx")) << mpt_held["summary_by_site"];

  // MPT's two sets fit each other's A100 and H100 (sm80) rows: a set on two sites is summarised
  // per site too, the sites' rows adding up to the set's
  const std::string sweep = "llm-foundry-mpt-sequence-sweep";
  const CommandResult both_mpt = scratch.run("predict --cross-validate " + mpt + "," + sweep + " --json");
  ASSERT_EQ(both_mpt.exit_code, 0) << both_mpt.stderr_text;
  const nlohmann::json mpt_sets = nlohmann::json::parse(both_mpt.stdout_text);
  const nlohmann::json& sweep_held = mpt_sets["held_out"][1];
  EXPECT_TRUE(sweep_held["not_held_out"].empty());
  ASSERT_EQ(sweep_held["summary_by_site"].size(), 2u) << sweep_held["summary_by_site"];
  int site_rows = 0;
  for (const auto& [site, summary] : sweep_held["summary_by_site"].items())
    for (const auto& f : summary)
      if (f["figure"] == "tokens_per_s") site_rows += f["rows"].get<int>();
  for (const auto& f : sweep_held["summary"])
    if (f["figure"] == "tokens_per_s") EXPECT_EQ(site_rows, f["rows"].get<int>()) << f;
  EXPECT_EQ(site_rows, 84);

  const CommandResult text = scratch.run("predict --cross-validate " + megatron + "," + titan);
  ASSERT_EQ(text.exit_code, 0) << text.stderr_text;
  // torchtitan publishes no figure a step time decides: Megatron's rows are fitted by no other set
  EXPECT_NE(text.stdout_text.find("publish no figure a step time decides: nothing fitted"), std::string::npos)
      << text.stdout_text;
  EXPECT_NE(text.stdout_text.find("not held out (10 rows"), std::string::npos) << text.stdout_text;

  const CommandResult one = scratch.run("predict --cross-validate " + megatron);
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.stderr_text.find("needs two sets or more"), std::string::npos) << one.stderr_text;
  const CommandResult both = scratch.run("predict --cross-validate " + megatron + "," + mpt + " --validate " + titan);
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.stderr_text.find("leave out --validate"), std::string::npos) << both.stderr_text;
}

// A case predict answers and the trainer refuses: predict's JSON (exit 0), train's exit 2 with
// `sentence` in its message, and no result file written.
nlohmann::json predicted_but_refused_by_the_trainer(Scratch& scratch, const std::filesystem::path& config,
                                                    const std::string& site, const std::string& sentence) {
  const CommandResult p = scratch.run("predict --config " + config.string() + " --site " + site + " --json");
  EXPECT_EQ(p.exit_code, 0) << p.stderr_text;
  const auto out = scratch.path(config.stem().string() + ".h5");
  const CommandResult t = scratch.run("train --config " + config.string() + " --out " + out.string());
  EXPECT_EQ(t.exit_code, 2) << t.stderr_text;
  EXPECT_NE(t.stderr_text.find(sentence), std::string::npos) << t.stderr_text;
  EXPECT_FALSE(std::filesystem::exists(out));
  return p.exit_code == 0 ? nlohmann::json::parse(p.stdout_text) : nlohmann::json();
}

// A tiny GPT whose model mapping ends with `model_keys` is refused by predict (exit 2) with `message`.
void expect_model_key_refused(Scratch& scratch, const std::string& model_keys, const std::string& message) {
  const auto bad = scratch.write("bad.yaml", "model: {layers: 2, hidden: 64, heads: 4, seq_len: 64, vocab: 256, " +
                                                 model_keys + "}\ndata: sotu\n");
  const CommandResult b = scratch.run("predict --config " + bad.string() + " --site " + kSite);
  EXPECT_EQ(b.exit_code, 2) << b.stderr_text;
  EXPECT_NE(b.stderr_text.find(message), std::string::npos) << b.stderr_text;
}

// strategy.tp_overlap is read and predicted (its sequence-parallel pairs under the GEMMs), and
// the trainer refuses it by name and writes nothing.
TEST(PredictCommand, TpOverlapIsPredictedAndTheTrainerRefusesIt) {
  Scratch scratch;
  const auto config = scratch.write(
      "overlap.yaml", "model: {layers: 2, hidden: 64, heads: 4, seq_len: 64, vocab: 256}\ndata: sotu\n"
                      "strategy: {tp: 2, sequence_parallel: true, tp_overlap: true}\nbatch: {global: 2}\nthreads: 1\n");
  const nlohmann::json p = predicted_but_refused_by_the_trainer(
      scratch, config, kSite, "strategy.tp_overlap (the sequence-parallel collectives under the linear layers' GEMMs");
  EXPECT_TRUE(p["feasible"].get<bool>()) << p;
}

// strategy.p2p_overlap is read and predicted (the pipeline's sends beside the compute: no p2p
// time on the stages' own streams), the trainer refuses it by name and writes nothing, and
// without a pipeline it is a configuration error that says so.
TEST(PredictCommand, P2pOverlapIsPredictedAndTheTrainerRefusesIt) {
  Scratch scratch;
  const std::string model = "model: {layers: 4, hidden: 64, heads: 4, seq_len: 64, vocab: 256}\ndata: sotu\n";
  const auto config = scratch.write("p2p.yaml", model +
                                                    "strategy: {pp: 2, micro_batches: 4, interleave: 2, p2p_overlap: "
                                                    "true}\nbatch: {global: 4}\nthreads: 1\n");
  const nlohmann::json p = predicted_but_refused_by_the_trainer(
      scratch, config, kSite, "strategy.p2p_overlap (the pipeline's sends and receives beside the compute");
  EXPECT_TRUE(p["feasible"].get<bool>()) << p;
  EXPECT_EQ(p["p2p_s"].get<double>(), 0.0) << p;
  const auto waiting = scratch.write("wait.yaml", model + "strategy: {pp: 2, micro_batches: 4, interleave: 2}\n"
                                                          "batch: {global: 4}\nthreads: 1\n");
  const CommandResult w = scratch.run("predict --config " + waiting.string() + " --site " + kSite + " --json");
  ASSERT_EQ(w.exit_code, 0) << w.stderr_text;
  EXPECT_GT(nlohmann::json::parse(w.stdout_text)["p2p_s"].get<double>(), 0.0);
  const auto flat = scratch.write("flat.yaml", model + "strategy: {p2p_overlap: true}\nbatch: {global: 2}\n");
  const CommandResult f = scratch.run("predict --config " + flat.string() + " --site " + kSite);
  EXPECT_EQ(f.exit_code, 2) << f.stderr_text;
  EXPECT_NE(f.stderr_text.find("strategy.p2p_overlap overlaps the pipeline's sends and receives with compute; it "
                               "needs strategy.pp > 1 (got 1)"),
            std::string::npos)
      << f.stderr_text;
}

// A key predict models as a saving and the trainer refuses: `body` with `keyed` is predicted
// feasible, the trainer refuses it with `sentence` and writes nothing, and its step is shorter
// than `body` with `plain`'s.
void expect_predicted_faster_and_refused(const std::string& body, const std::string& keyed, const std::string& plain,
                                         const std::string& sentence) {
  Scratch scratch;
  const auto config = scratch.write("keyed.yaml", body + keyed);
  const nlohmann::json with = predicted_but_refused_by_the_trainer(scratch, config, kSite, sentence);
  ASSERT_TRUE(with["feasible"].get<bool>()) << with;
  const auto without = scratch.write("plain.yaml", body + plain);
  const CommandResult p = scratch.run("predict --config " + without.string() + " --site " + kSite + " --json");
  ASSERT_EQ(p.exit_code, 0) << p.stderr_text;
  EXPECT_LT(with["step_time_s"].get<double>(), nlohmann::json::parse(p.stdout_text)["step_time_s"].get<double>());
}

// strategy.grad_accumulation_fusion: with 16-bit main gradients, no pass of their own per micro-batch.
TEST(PredictCommand, GradAccumulationFusionIsPredictedAndTheTrainerRefusesIt) {
  expect_predicted_faster_and_refused(
      "model: {layers: 2, hidden: 64, heads: 4, seq_len: 64, vocab: 256}\ndata: sotu\n"
      "precision: {dtype: bf16, main_grads: storage}\nbatch: {global: 8, micro: 1}\nthreads: 1\n",
      "strategy: {grad_accumulation_fusion: true}\n", "",
      "strategy.grad_accumulation_fusion (the weight-gradient GEMMs accumulating into the main");
}

// strategy.recompute_early_stop: a shorter step than whole-forward recomputation.
TEST(PredictCommand, RecomputeEarlyStopIsPredictedAndTheTrainerRefusesIt) {
  expect_predicted_faster_and_refused(
      "model: {layers: 2, hidden: 64, heads: 4, seq_len: 64, vocab: 256}\ndata: sotu\nbatch: {global: 2}\n"
      "threads: 1\n",
      "strategy: {recompute: full, recompute_early_stop: true}\n", "strategy: {recompute: full}\n",
      "strategy.recompute_early_stop (a block's recomputed forward stopping once");
}

// A case the trainer refuses is still predicted, and predict names the refusal.
TEST(PredictCommand, FlashAttentionIsPredictedAndTheTrainerRefusesIt) {
  Scratch scratch;
  const auto config = scratch.write(
      "flash.yaml", "model: {layers: 2, hidden: 64, heads: 4, seq_len: 64, vocab: 256, attention: flash}\n"
                    "data: sotu\nbatch: {global: 2}\nthreads: 1\n");
  const nlohmann::json j = predicted_but_refused_by_the_trainer(
      scratch, config, kSite, "model.attention flash is modelled by `scalebench predict` and `plan` only");
  // predict says the same sentence beside its prediction, and null for what the trainer runs
  ASSERT_TRUE(j["trainer_refusal"].is_string());
  EXPECT_NE(j["trainer_refusal"].get<std::string>().find("model.attention flash is modelled by `scalebench predict`"),
            std::string::npos);
  const auto spam = scratch.write("spam.yaml", "model: gpt-nano\ndata: spam-assassin\nbatch: {global: 8}\n"
                                               "strategy: {dp: 2, zero: 3}\n");
  const CommandResult r = scratch.run("predict --config " + spam.string() + " --site this-machine");
  EXPECT_NE(r.stdout_text.find("trainer       refuses it: "), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("strategy.zero 3 shards the parameters of the GPT language model (data.dataset sotu) "
                               "and the ResNets"), std::string::npos)
      << r.stdout_text;
  const auto trained = scratch.write("trained.yaml", "model: {layers: 2, hidden: 64, heads: 4, seq_len: 64, vocab: 256}"
                                                     "\ndata: sotu\nbatch: {global: 2}\nstrategy: {dp: 2, zero: 3}\n");
  const CommandResult ok = scratch.run("predict --config " + trained.string() + " --site this-machine --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.stderr_text;
  EXPECT_TRUE(nlohmann::json::parse(ok.stdout_text)["trainer_refusal"].is_null()) << ok.stdout_text;
  // a named GPT takes its attention from the mapping form: flash keeps no score matrix
  const auto named = scratch.write("named.yaml", "model: gpt-1.3b\ndata: sotu\nbatch: {global: 8}\nstrategy: {dp: 8}\n");
  const auto named_flash = scratch.write("named_flash.yaml", "model: {name: gpt-1.3b, attention: flash}\ndata: sotu\n"
                                                             "batch: {global: 8}\nstrategy: {dp: 8}\n");
  const CommandResult unfused = scratch.run("predict --config " + named.string() + " --site " + kSite + " --json");
  const CommandResult flash = scratch.run("predict --config " + named_flash.string() + " --site " + kSite + " --json");
  ASSERT_EQ(unfused.exit_code, 0) << unfused.stderr_text;
  ASSERT_EQ(flash.exit_code, 0) << flash.stderr_text;
  EXPECT_LT(nlohmann::json::parse(flash.stdout_text)["memory_bytes"]["activations"].get<double>(),
            nlohmann::json::parse(unfused.stdout_text)["memory_bytes"]["activations"].get<double>());
  expect_model_key_refused(scratch, "attention: fused", "model.attention is 'fused'; it must be unfused or flash");
}

// model.cross_entropy unfused (PyTorch's loss on upcast logits) is predicted, holding more bytes
// a logit than the fused default; the trainer refuses it by name; any other value is refused.
TEST(PredictCommand, UnfusedCrossEntropyIsPredictedAndTheTrainerRefusesIt) {
  Scratch scratch;
  const auto config = scratch.write(
      "unfused_loss.yaml", "model: {layers: 2, hidden: 64, heads: 4, seq_len: 64, vocab: 256, cross_entropy: unfused}\n"
                           "data: sotu\nbatch: {global: 2}\nthreads: 1\n");
  const nlohmann::json p = predicted_but_refused_by_the_trainer(
      scratch, config, kSite, "model.cross_entropy unfused is modelled by `scalebench predict` and `plan` only");
  EXPECT_TRUE(p["feasible"].get<bool>()) << p;
  const auto named = [&](const std::string& loss) {
    const auto file = scratch.write("llama_" + loss + ".yaml", "model: {name: llama3-8b, attention: flash, cross_entropy: " +
                                                                   loss + "}\nprecision: bf16\nbatch: {global: 8}\nstrategy: {dp: 8, zero: 3}\n");
    const CommandResult r = scratch.run("predict --config " + file.string() + " --site h100-sxm-dgx --json");
    EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
    return nlohmann::json::parse(r.stdout_text)["memory_bytes"]["activations"].get<double>();
  };
  // 8192 tokens × 128256 logits × (10 − 2) bytes more at the loss's peak
  EXPECT_DOUBLE_EQ(named("unfused") - named("fused"), 8192.0 * 128256 * 8);
  expect_model_key_refused(scratch, "cross_entropy: chunked",
                           "model.cross_entropy is 'chunked'; it must be fused or unfused");
}

// model.kernels sm80 (compute capability 8.0's kernels on a later GPU) is predicted on the
// profile's sm80 constants, slower than native on an H100 and saying so; the trainer refuses it
// by name; a profile without them (the A100's own kernels are sm80) and any other value are
// refused with the key.
TEST(PredictCommand, SmEightyKernelsArePredictedAndTheTrainerRefusesThem) {
  Scratch scratch;
  const auto config = scratch.write(
      "sm80.yaml", "model: {layers: 2, hidden: 64, heads: 4, seq_len: 64, vocab: 256, kernels: sm80}\n"
                   "data: sotu\nbatch: {global: 2}\nthreads: 1\nprecision: bf16\n");
  const nlohmann::json p = predicted_but_refused_by_the_trainer(
      scratch, config, kH100, "model.kernels sm80 (kernels of an older GPU's instructions on a newer one) is modelled");
  EXPECT_EQ(p["kernels"], "sm80") << p;
  const auto named = [&](const std::string& kernels) {
    const auto file = scratch.write("mpt_" + kernels + ".yaml",
                                    "model: {layers: 32, hidden: 4096, heads: 32, seq_len: 2048, vocab: 50368, "
                                    "attention: flash, kernels: " + kernels + "}\nprecision: bf16\n"
                                    "batch: {global: 48, micro: 6}\nstrategy: {dp: 8, zero: 3}\n");
    return scratch.run("predict --config " + file.string() + " --site h100-sxm-dgx");
  };
  const CommandResult sm80 = named("sm80"), native = named("native");
  ASSERT_EQ(sm80.exit_code, 0) << sm80.stderr_text;
  ASSERT_EQ(native.exit_code, 0) << native.stderr_text;
  EXPECT_NE(sm80.stdout_text.find(", bf16, sm80 kernels\n"), std::string::npos) << sm80.stdout_text;
  EXPECT_EQ(native.stdout_text.find("sm80"), std::string::npos) << native.stdout_text;
  // each takes its band from the published rows run on its own kernels
  EXPECT_NE(sm80.stdout_text.find("with sm80 kernels: llm-foundry-mpt-benchmarks version 1, "
                                  "llm-foundry-mpt-sequence-sweep version 1)"), std::string::npos)
      << sm80.stdout_text;
  EXPECT_EQ(native.stdout_text.find("llm-foundry"), std::string::npos) << native.stdout_text;
  const auto step = [](const std::string& text) { return std::stod(text.substr(text.find("step time") + 9)); };
  EXPECT_GT(step(sm80.stdout_text), 1.1 * step(native.stdout_text));
  const CommandResult a100 = scratch.run("predict --config " + config.string() + " --site " + kSite);
  EXPECT_EQ(a100.exit_code, 2) << a100.stderr_text;
  EXPECT_NE(a100.stderr_text.find("'gemm.e_max_sm80' is not given"), std::string::npos) << a100.stderr_text;
  expect_model_key_refused(scratch, "kernels: sm90", "model.kernels is 'sm90'; it must be native");
}

}  // namespace
}  // namespace sb::testing
