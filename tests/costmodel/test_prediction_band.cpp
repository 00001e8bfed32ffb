// SPDX-License-Identifier: Apache-2.0
// Prediction bands (prediction_band.hpp): the ratio each published figure gives, the range over a
// device's rows, and the shipped sets' band on the A100 and H100 profiles, stored with the run's
// prediction. Leaves out the report's mark (analysis/report.py reads step_time_outside_band).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "costmodel/prediction_band.hpp"
#include "costmodel/predict_case.hpp"
#include "costmodel/run_prediction.hpp"
#include "costmodel_test_support.hpp"

namespace sb::costmodel {
namespace {

RowReplay row(const std::string& figure, double published, double predicted) {
  RowReplay r;
  r.id = figure;
  r.feasible = true;
  r.figures.push_back({"parameters", 1e9, 1e9, 0.0});
  r.figures.push_back({figure, published, predicted, 100 * (predicted - published) / published});
  return r;
}

TEST(PredictionBand, EachFigureGivesMeasuredOverPredictedTime) {
  // a step time published at 1.2 s and predicted at 1.0 s: the run took 1.2 × the prediction
  EXPECT_DOUBLE_EQ(*measured_over_predicted_time(row("step_time_s", 1.2, 1.0)), 1.2);
  // a rate predicted 10% high: the run took 1.1 × the predicted time
  EXPECT_DOUBLE_EQ(*measured_over_predicted_time(row("tokens_per_s", 100, 110)), 1.1);
  EXPECT_DOUBLE_EQ(*measured_over_predicted_time(row("mfu_percent", 40, 36)), 0.9);
  RowReplay refused = row("step_time_s", 1, 1);
  refused.feasible = false;
  EXPECT_FALSE(measured_over_predicted_time(refused));
}

TEST(PredictionBand, TheRangeOverTheDevicesRowsScalesTheStepTime) {
  ValidationReplay a, b;
  a.name = "set-a";
  a.version = 1;
  a.rows = {row("step_time_s", 1.05, 1.0), row("tokens_per_s", 100, 108)};
  b.name = "set-b";
  b.version = 2;
  b.rows = {row("tflops_per_device", 100, 95), row("step_time_s", 3.0, 1.0)};
  // the last row runs on another device: left out
  const std::vector<std::string> devices = {"X", "X", "X", "Y"};
  const auto band = band_from_replays({a, b}, devices, "X", 2.0);
  ASSERT_TRUE(band);
  EXPECT_EQ(band->rows, 3);
  EXPECT_DOUBLE_EQ(band->low_ratio, 0.95);
  EXPECT_DOUBLE_EQ(band->high_ratio, 1.08);
  EXPECT_DOUBLE_EQ(band->low_s, 1.9);
  EXPECT_DOUBLE_EQ(band->high_s, 2.16);
  EXPECT_EQ(band->sets, "set-a version 1, set-b version 2");
  EXPECT_NE(band->method.find("3 feasible rows on X"), std::string::npos) << band->method;
  EXPECT_FALSE(band_from_replays({a, b}, devices, "Z", 2.0));
}

TEST(PredictionBand, ShippedSetsGiveTheA100AndH100ProfilesABandAndTheCpuSiteNone) {
  const SiteProfile a100 = testing::site("a100-80gb-dgx");
  const auto band = prediction_band(a100, 10.0);
  ASSERT_TRUE(band);
  // 10 Megatron-LM Table 1 rows, 8 of Korthikanti et al., 6 MPT A100 rows and 52 of MPT's A100 sweep
  EXPECT_EQ(band->rows, 76);
  EXPECT_LT(band->low_ratio, 1.0);
  EXPECT_GT(band->high_ratio, 1.0);
  EXPECT_NE(band->sets.find("megatron-lm-narayanan2021-table1 version 1"), std::string::npos) << band->sets;
  EXPECT_NE(band->sets.find("megatron-lm-korthikanti2022 version 1"), std::string::npos) << band->sets;
  EXPECT_NE(band->sets.find("llm-foundry-mpt-benchmarks version 1"), std::string::npos) << band->sets;
  EXPECT_NE(band->sets.find("llm-foundry-mpt-sequence-sweep version 1"), std::string::npos) << band->sets;
  const auto h100 = prediction_band(testing::site("h100-sxm-dgx"), 1.0);
  ASSERT_TRUE(h100);
  // the rows on the H100's own kernels: 5 + 5 NVIDIA DGX Cloud GPT-3 175B rows (bf16, fp8), 8 + 8
  // of its Nemotron-4 15B and 5 + 5 of its Nemotron-4 340B (bf16, fp8), 7 NeMo 24.07 fp8 rows, 2
  // Megatron-Bridge Llama 3 70B fp8 rows; not MPT's, which run sm80's
  EXPECT_EQ(h100->rows, 45);
  EXPECT_NE(h100->sets.find("nvidia-dgxc-benchmarking-gpt3-175b version 1"), std::string::npos) << h100->sets;
  EXPECT_NE(h100->sets.find("nvidia-dgxc-benchmarking-nemotron4-15b version 1"), std::string::npos) << h100->sets;
  EXPECT_NE(h100->sets.find("nvidia-dgxc-benchmarking-nemotron4-340b-fp8 version 1"), std::string::npos) << h100->sets;
  EXPECT_EQ(h100->sets.find("llm-foundry"), std::string::npos) << h100->sets;
  // an sm80 case's band: MPT's 5 rows at sequence 2048 and 32 of its sweep, and nothing else
  const auto sm80 = prediction_band(testing::site("h100-sxm-dgx"), 1.0, "sm80");
  ASSERT_TRUE(sm80);
  EXPECT_EQ(sm80->rows, 37);
  EXPECT_EQ(sm80->sets, "llm-foundry-mpt-benchmarks version 1, llm-foundry-mpt-sequence-sweep version 1");
  EXPECT_NE(sm80->method.find("model.kernels is sm80"), std::string::npos) << sm80->method;
  EXPECT_FALSE(prediction_band(testing::site("a100-80gb-dgx"), 1.0, "sm80"));  // no A100 row runs sm80
  EXPECT_FALSE(prediction_band(testing::site("this-machine"), 1.0));
}

TEST(PredictionBand, TheRunsPredictionStoresItsBand) {
  plan::TrainConfig c = load_predict_case(std::string(SB_SOURCE_DIR) + "/models/gpt/configs/gpt-175b-megatron.yaml", {});
  c.site = "a100-80gb-dgx";
  const plan::RunPrediction run = predict_run(c);
  ASSERT_TRUE(run.feasible);
  ASSERT_TRUE(run.band_step_time_s);
  const auto find = [&](const std::string& key) {
    return std::find_if(run.attributes.begin(), run.attributes.end(), [&](const auto& a) { return a.first == key; });
  };
  for (const char* key : {"band_step_time_low_s", "band_step_time_high_s", "band_rows", "band_method",
                          "mfu_convention", "peak_flops_source", "hfu"})
    EXPECT_NE(find(key), run.attributes.end()) << key;
  EXPECT_DOUBLE_EQ(std::get<double>(find("band_step_time_low_s")->second), run.band_step_time_s->first);
  EXPECT_LE(run.band_step_time_s->first, run.band_step_time_s->second);
  EXPECT_EQ(std::get<std::int64_t>(find("band_rows")->second), 76);
}

}  // namespace
}  // namespace sb::costmodel
