// SPDX-License-Identifier: Apache-2.0
// The fused (flash) attention's activation term, the shape-aware GEMM model's wave quantisation
// and memory roofline on hand-computed shapes, the fit of e_max recovering a known value from a
// set predicted with it, and the replay of the shipped validation sets within the errors
// measured when the shipped e_max were fitted (a regression fails). Leaves out the flat
// peak × efficiency model (test_step_prediction.cpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "costmodel/closed_forms.hpp"
#include "costmodel/gemm_model.hpp"
#include "costmodel/site_profile.hpp"
#include "costmodel/step_prediction.hpp"
#include "costmodel/validation_set.hpp"
#include "costmodel_test_support.hpp"
#include "models/gpt/gpt_flops.hpp"

namespace sb::costmodel {
namespace {

// A shipped validation set of the source tree, by name.
ValidationSet published_set(const std::string& name) {
  return load_validation_set(std::string(SB_SOURCE_DIR) + "/validation/published/" + name + ".yaml");
}

// The GEMM constants `predict --fit` gives on the shipped sets named.
std::vector<EmaxFit> fit_on_sets(const std::vector<std::string>& names) {
  std::vector<ValidationSet> sets;
  for (const std::string& name : names) sets.push_back(published_set(name));
  return fit_gemm_e_max(sets);
}

TEST(FlashAttention, KorthikantiTermWithAndWithoutTheScores) {
  const double s = 2048, b = 2, h = 4096, a = 32, sbh = s * b * h;
  // unfused: sbh·(34 + 5as/h) at t = 1; the 5as/h term is 5·a·s²·b bytes
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 1, false, Recompute::none), sbh * (34 + 5 * a * s / h));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 1, false, Recompute::none) -
                       activation_bytes_per_layer(s, b, h, a, 1, false, Recompute::none, true),
                   5 * a * s * s * b);
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 1, false, Recompute::none, true), 34 * sbh);
  // tp 4: sbh·(10 + 24/4), the scores' 5as/(4h) gone; sequence parallel 34·sbh/4
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 4, false, Recompute::none, true), sbh * 16);
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 4, true, Recompute::none, true), 34 * sbh / 4);
  // what selective and full recomputation keep does not hold the scores either way
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 4, false, Recompute::selective, true),
                   activation_bytes_per_layer(s, b, h, a, 4, false, Recompute::selective));
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(s, b, h, a, 1, false, Recompute::full, true), 2 * sbh);
}

plan::TrainConfig mpt_7b(const std::string& attention) {
  plan::TrainConfig c = testing::gpt_case(32, 4096, 32, 8, 1, 1, 48, 6, "bf16", 50368);
  c.strategy.zero = 3;
  c.model.attention = attention;
  return c;
}

TEST(FlashAttention, PredictionKeepsNoScoresAndMakesNoPassesOverThem) {
  const SiteProfile a100 = testing::site("a100-80gb-dgx");
  const Prediction flash = predict_step(mpt_7b("flash"), a100);
  const Prediction unfused = predict_step(mpt_7b("unfused"), a100);
  ASSERT_TRUE(flash.feasible) << flash.reason;
  // unfused, the 32 layers' probabilities of 6 × 32 heads × 2048² do not fit in 80 GB
  EXPECT_FALSE(unfused.feasible);
  EXPECT_NE(unfused.reason.find("activations"), std::string::npos) << unfused.reason;
  // flash: Korthikanti's 34·sbh per layer (bf16) plus the final norm's and the head's bf16
  // inputs and the logits' fp32 softmax and, beside it while the loss runs, their bf16 copy (no
  // recompute scratch)
  const double sbh = 2048.0 * 6 * 4096, logits = 6.0 * 2048 * 50368 * (4 + 2);
  EXPECT_NEAR(flash.memory.activations, 32 * 34 * sbh + 2 * 2 * sbh + logits, 1e-6 * flash.memory.activations);
}

GemmModel a100_tiles() { return GemmModel{108, 128, 128, 0.8}; }

TEST(GemmModel, WaveQuantisationOnHandComputedShapes) {
  const GemmModel g = a100_tiles();
  // 9 × 12 = 108 tiles: one full wave
  EXPECT_DOUBLE_EQ(gemm_quantisation(g, 1, 9 * 128, 12 * 128), 1.0);
  // 10 × 12 = 120 tiles: 120/108 waves run as 2
  EXPECT_DOUBLE_EQ(gemm_quantisation(g, 1, 10 * 128, 12 * 128), (120.0 / 108.0) / 2.0);
  // 216 tiles: two full waves
  EXPECT_DOUBLE_EQ(gemm_quantisation(g, 2, 9 * 128, 12 * 128), 1.0);
  // M 1000 pads to 8 tiles of 128 (1000/1024 used), 8 tiles fill 8/108 of one wave
  EXPECT_DOUBLE_EQ(gemm_quantisation(g, 1, 1000, 128), (8.0 / 108.0) * (1000.0 / 1024.0));
  // a 256×128 tile: 2048 × 4096 is 8 × 32 = 256 tiles, 256/132 waves of an H100 run as 2
  EXPECT_DOUBLE_EQ(gemm_quantisation(GemmModel{132, 256, 128, 0.8}, 1, 2048, 4096), (256.0 / 132.0) / 2.0);
}

TEST(GemmModel, SecondsAreTheComputeOrTheMemoryBound) {
  const GemmModel g = a100_tiles();
  const double peak = 312e12, bandwidth = 2.039e12;
  // a full wave: 2·M·N·K over peak · e_max
  const GemmShape big{1, 9 * 128, 12 * 128, 8192};
  EXPECT_DOUBLE_EQ(gemm_seconds(g, big, peak, bandwidth, 2), big.flops() / (peak * 0.8));
  // 108 batched 128 × 128 outputs over K 8: one full wave, but the operands' and results' bytes
  // over the bandwidth bound it
  const GemmShape skinny{108, 128, 128, 8};
  EXPECT_DOUBLE_EQ(gemm_seconds(g, skinny, peak, bandwidth, 2),
                   2.0 * 108 * (128.0 * 8 + 8.0 * 128 + 128.0 * 128) / bandwidth);
  EXPECT_GT(gemm_seconds(g, skinny, peak, bandwidth, 2), skinny.flops() / (peak * 0.8));
  // the backward's two GEMMs have the forward's FLOPs each
  for (const GemmShape& s : gemm_backward(big)) EXPECT_DOUBLE_EQ(s.flops(), big.flops());
}

// A tile's fill and epilogue cost k_overhead steps of K: a GEMM over K = k_overhead takes twice
// its time without them, one over K = 3·k_overhead 4/3 of it; the memory bound is untouched.
TEST(GemmModel, KOverheadSlowsShortKGemms) {
  GemmModel g = a100_tiles();
  const double peak = 312e12, bandwidth = 2.039e12;
  const GemmShape short_k{1, 9 * 128, 12 * 128, 256}, long_k{1, 9 * 128, 12 * 128, 768};
  const double short_without = gemm_seconds(g, short_k, peak, bandwidth, 2);
  const double long_without = gemm_seconds(g, long_k, peak, bandwidth, 2);
  g.k_overhead = 256;
  EXPECT_DOUBLE_EQ(gemm_k_share(g, 256), 0.5);
  EXPECT_DOUBLE_EQ(gemm_seconds(g, short_k, peak, bandwidth, 2), 2 * short_without);
  EXPECT_DOUBLE_EQ(gemm_seconds(g, long_k, peak, bandwidth, 2), long_without * 4.0 / 3.0);
  const GemmShape skinny{108, 128, 128, 8};  // memory-bound with or without the overhead's compute
  g.k_overhead = 1;
  EXPECT_DOUBLE_EQ(gemm_seconds(g, skinny, peak, bandwidth, 2), 2.0 * 108 * (128.0 * 8 + 8.0 * 128 + 128.0 * 128) / bandwidth);
}

// The fused causal attention kernel: of the T×T scores it computes the blocks on and below the
// diagonal ((n + 1)/(2n) of them for n query blocks), at e_attention (e_max when the profile has
// none) times the share of its loop over those keys that k_overhead leaves, times the waves'
// quantisation; its backward is 2.5 forwards.
TEST(GemmModel, FusedAttentionComputesTheCausalBlocksAtItsOwnEfficiency) {
  GemmModel g = a100_tiles();  // 108 SMs, 128 × 128 tiles, e_max 0.8, k_overhead 0
  const double peak = 312e12, d = 128;
  // 108 heads of T = 1024: 8 query blocks each, 864 blocks = 8 full waves; 9/16 of the scores
  const double full = 4.0 * 108 * 1024 * 1024 * d;
  FusedAttentionSeconds t = fused_attention_seconds(g, 108, 1024, d, peak);
  EXPECT_DOUBLE_EQ(t.forward, full * 9.0 / 16.0 / (peak * 0.8));
  EXPECT_DOUBLE_EQ(t.backward, 2.5 * t.forward);
  // its own efficiency in place of e_max
  g.e_attention = 0.4;
  EXPECT_DOUBLE_EQ(fused_attention_seconds(g, 108, 1024, d, peak).forward, full * 9.0 / 16.0 / (peak * 0.4));
  // k_overhead over the keys a block visits on average (9/16 · 1024 = 576): 576/(576 + 576)
  g.k_overhead = 576;
  EXPECT_DOUBLE_EQ(fused_attention_seconds(g, 108, 1024, d, peak).forward, 2 * full * 9.0 / 16.0 / (peak * 0.4));
  // longer sequences pay the overhead on a smaller share: faster per computed FLOP
  const auto per_flop = [&](double T) {
    const double blocks = std::ceil(T / 128);
    return fused_attention_seconds(g, 108, T, d, peak).forward / (4.0 * 108 * T * T * d * (blocks + 1) / (2 * blocks));
  };
  EXPECT_LT(per_flop(8192), per_flop(2048));
  // one head of T = 1024 is 8 blocks, 8/108 of one wave: a head's time at full waves is 8/108 of it;
  // 27 heads (216 blocks) fill two waves, 28 heads (224 blocks) run as 3
  g.k_overhead = 0;
  const double at_full_waves = fused_attention_seconds(g, 1, 1024, d, peak).forward * 8.0 / 108.0;
  EXPECT_NEAR(fused_attention_seconds(g, 27, 1024, d, peak).forward, 27 * at_full_waves, 1e-15);
  EXPECT_NEAR(fused_attention_seconds(g, 28, 1024, d, peak).forward, 28 * at_full_waves * 3.0 / (224.0 / 108.0),
              1e-15);
}

TEST(GemmModel, BlockGemmsHaveTheBlocksFlops) {
  gpt::GptConfig g;
  g.layers = 1, g.channels = 4096, g.heads = 32, g.vocab = 50368, g.max_seq_len = 2048;
  for (std::int64_t tp : {1, 2, 4}) {
    double flops = 0;
    for (const GemmShape& s : gpt_block_gemms(g, 3, 2048, tp)) flops += s.flops();
    EXPECT_NEAR(flops * static_cast<double>(tp), gpt::gpt_block_forward_flops(g, 3, 2048), 1e-9 * flops * tp);
  }
}

// A set whose published figures are the cost model's own: the first `rows` rows of the shipped
// set `name` (every `stride`-th; only those on `device` where given), each predicted on its
// device's profile with the GEMM model as `adjust` leaves it, publishing its step time (and, with
// `tflops`, its TFLOP/s per device).
ValidationSet predicted_set(const std::string& name, std::size_t rows, const std::function<void(GemmModel&)>& adjust,
                            bool tflops = false, std::size_t stride = 1, const std::string& device = "") {
  ValidationSet shipped = published_set(name);
  if (!device.empty()) std::erase_if(shipped.rows, [&](const ValidationRow& r) { return r.device != device; });
  ValidationSet synthetic{"synthetic", "synthetic", "predicted by the cost model from " + name, 1, {}};
  for (std::size_t i = 0; i < rows; ++i) {
    ValidationRow row = shipped.rows.at(i * stride);
    SiteProfile site = validation_site(shipped, row);
    EXPECT_TRUE(site.gemm.has_value()) << row.id;
    adjust(*site.gemm);
    const Prediction p = predict_step(validation_case(shipped, row), site, row.gpus);
    EXPECT_TRUE(p.feasible) << row.id << ": " << p.reason;
    row.published = {{"step_time_s", p.step_time_s}};
    if (tflops) row.published["tflops_per_device"] = p.tflops_per_device;
    synthetic.rows.push_back(row);
  }
  return synthetic;
}

// The GEMM model of the shipped profile the first row of set `name` runs on.
GemmModel shipped_gemm(const std::string& name) {
  const ValidationSet set = published_set(name);
  return *validation_site(set, set.rows.front()).gemm;
}

// fp8 rows fit the device's e_max_fp8 and leave its e_max alone: a set predicted at e_max_fp8
// 0.6 (e_max as shipped) gives back 0.6 under the key e_max_fp8.
TEST(GemmFit, FpEightRowsFitTheirOwnEfficiency) {
  const std::string set = "nvidia-dgxc-benchmarking-gpt3-175b-fp8";
  const ValidationSet synthetic = predicted_set(set, 2, [](GemmModel& g) { g.e_max_fp8 = 0.6; });
  const double shipped_e_max = shipped_gemm(set).e_max;
  const std::vector<EmaxFit> fits = fit_gemm_e_max({synthetic});
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].key, "e_max_fp8");
  EXPECT_NEAR(fits[0].e_max, 0.6, 2e-4);
  // the fit moved e_max_fp8 only: the bf16 GEMMs (attention core, head) kept the shipped e_max,
  // which differs from 0.6, so a fit that set the wrong key could not recover it
  EXPECT_LT(fits[0].mean_abs_error_pct, 0.05);
  EXPECT_GT(shipped_e_max, 0.6 + 0.05);
}

// Rows with model.kernels sm80 fit the device's e_max_sm80, not its e_max: MPT's H100 rows
// predicted at e_max_sm80 0.55 give back 0.55 under that key, starting from the profile's sm80
// constants (its native e_max lies far from 0.55, so a fit of the wrong key could not).
TEST(GemmFit, SmEightyRowsFitTheirOwnEfficiency) {
  const std::string set = "llm-foundry-mpt-sequence-sweep", device = "NVIDIA H100-SXM5-80GB";
  const ValidationSet shipped = published_set(set);
  const auto first_h100 = std::find_if(shipped.rows.begin(), shipped.rows.end(),
                                       [&](const ValidationRow& r) { return r.device == device; });
  ASSERT_NE(first_h100, shipped.rows.end());
  ASSERT_TRUE(validation_site(shipped, *first_h100).gemm->sm80);  // so the adjustment below has its constants
  const ValidationSet h100 = predicted_set(set, 6, [](GemmModel& g) { g.sm80->e_max = 0.55; }, false, 1, device);
  for (const ValidationRow& row : h100.rows)
    EXPECT_EQ(predict_step(validation_case(h100, row), validation_site(h100, row), row.gpus).kernels, "sm80") << row.id;
  const std::vector<EmaxFit> fits = fit_gemm_e_max({h100});
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].key, "e_max_sm80");
  EXPECT_NEAR(fits[0].e_max, 0.55, 2e-4);
  EXPECT_LT(fits[0].mean_abs_error_pct, 0.05);
  const GemmModel shipped_h100 = *validation_site(shipped, h100.rows.front()).gemm;
  EXPECT_GT(shipped_h100.e_max, 0.55 + 0.05);  // so a fit of the wrong key could not give 0.55 back
  EXPECT_DOUBLE_EQ(fits[0].shipped_e_max, shipped_h100.sm80->e_max);
  EXPECT_EQ(fits[0].shipped_e_attention, shipped_h100.sm80->e_attention);
}

// model.kernels sm80 runs the profile's sm80 constants: slower than native where they are lower,
// refused by name where the profile has none, with fp8, and on a site without a GEMM model.
TEST(GemmModel, SmEightyKernelsRunTheirOwnConstantsOrAreRefused) {
  const ValidationSet set = published_set("llm-foundry-mpt-benchmarks");
  const auto row = std::find_if(set.rows.begin(), set.rows.end(),
                                [](const ValidationRow& r) { return r.device == "NVIDIA H100-SXM5-80GB"; });
  ASSERT_NE(row, set.rows.end());
  SiteProfile site = validation_site(set, *row);
  plan::TrainConfig sm80 = validation_case(set, *row), native = sm80;
  ASSERT_EQ(sm80.model.kernels, "sm80");
  native.model.kernels = "native";
  const Prediction a = predict_step(sm80, site, row->gpus), b = predict_step(native, site, row->gpus);
  ASSERT_TRUE(a.feasible && b.feasible);
  EXPECT_GT(a.compute_s, b.compute_s * site.gemm->e_max / site.gemm->sm80->e_max * 0.95);
  EXPECT_EQ(a.kernels, "sm80");
  EXPECT_EQ(b.kernels, "native");
  site.gemm->sm80->e_max = site.gemm->e_max;  // the same efficiencies: the same prediction
  site.gemm->sm80->e_attention = site.gemm->e_attention;
  EXPECT_DOUBLE_EQ(predict_step(sm80, site, row->gpus).step_time_s, b.step_time_s);
  plan::TrainConfig fp8 = sm80;
  fp8.precision.dtype = "fp8";
  EXPECT_THROW(predict_step(fp8, site, row->gpus), UserError);
  site.gemm->sm80.reset();
  try {
    predict_step(sm80, site, row->gpus);
    ADD_FAILURE() << "sm80 kernels on a profile without e_max_sm80 were predicted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("gemm.e_max_sm80"), std::string::npos) << e.what();
  }
  site.gemm.reset();
  EXPECT_THROW(predict_step(sm80, site, row->gpus), UserError);
}

// fp8 puts the blocks' linear layers on the fp8 peak: the same run is faster than in bf16 but
// not twice (the attention core and head stay bf16, the casts add memory passes), and a device
// without an fp8 peak or an fp8 efficiency refuses it by name.
TEST(GemmModel, FpEightRunsTheLinearLayersOnTheFpEightPeak) {
  const ValidationSet dgxc = published_set("nvidia-dgxc-benchmarking-gpt3-175b-fp8");
  const ValidationRow& row = dgxc.rows.front();
  SiteProfile site = validation_site(dgxc, row);
  plan::TrainConfig fp8 = validation_case(dgxc, row), bf16 = fp8;
  bf16.precision.dtype = "bf16";
  site.gemm->e_max_fp8 = site.gemm->e_max;  // the same efficiency, each against its own peak
  const Prediction f = predict_step(fp8, site, row.gpus), b = predict_step(bf16, site, row.gpus);
  ASSERT_TRUE(f.feasible && b.feasible);
  EXPECT_LT(f.compute_s, 0.75 * b.compute_s);
  EXPECT_GT(f.compute_s, 0.5 * b.compute_s);
  EXPECT_DOUBLE_EQ(f.peak_flops, site.peak("fp8"));
  site.gemm->e_max_fp8.reset();
  EXPECT_THROW(predict_step(fp8, site, row.gpus), UserError);
  site.peak_flops.erase("fp8");
  EXPECT_THROW(predict_step(fp8, site, row.gpus), UserError);
}

// Two Megatron models (widths 2304 and 3072) predicted at e_max 0.55 and k_overhead 200: e_max
// and k_overhead could pass through both whatever the overhead, so the fit keeps the profile's
// k_overhead and moves e_max alone; a third width lets it fit both (the test below).
TEST(GemmFit, TwoWidthsKeepTheProfilesKOverhead) {
  const std::string set = "megatron-lm-narayanan2021-table1";
  const auto predicted_at = [](GemmModel& g) {
    g.e_max = 0.55;
    g.k_overhead = 200;
  };
  const std::vector<EmaxFit> fits = fit_gemm_e_max({predicted_set(set, 2, predicted_at, true)});
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_FALSE(fits[0].k_overhead_fitted);
  EXPECT_DOUBLE_EQ(fits[0].k_overhead, shipped_gemm(set).k_overhead);
  const std::vector<EmaxFit> three = fit_gemm_e_max({predicted_set(set, 3, predicted_at, true)});
  ASSERT_EQ(three.size(), 1u);
  EXPECT_TRUE(three[0].k_overhead_fitted);
  EXPECT_NEAR(three[0].k_overhead, 200, 4);
}

// Three widths all wide (the H100's 16-bit sets: 12288, 6144 and 18432) see C/(C + k_overhead)
// within 0.05 of each other at the profile's 366: e_max and k_overhead would trade against each
// other, so the fit keeps the profile's k_overhead, and with it e_attention (fitted alone against
// a borrowed overhead, it stopped at 0.259 with e_max 0.622 on these rows, 1.3% mean |error| where
// 0 exists), and recovers e_max alone. Megatron's three narrowest (2304 to 4096: 0.863 to 0.918)
// are far enough apart to fit k_overhead (the test above).
TEST(GemmFit, WideModelsAloneKeepTheProfilesKOverhead) {
  const auto predicted_at = [](GemmModel& g) { g.e_max = 0.6; };
  std::vector<ValidationSet> sets;
  for (const char* name : {"nvidia-dgxc-benchmarking-gpt3-175b", "nvidia-dgxc-benchmarking-nemotron4-15b",
                           "nvidia-dgxc-benchmarking-nemotron4-340b"})
    sets.push_back(predicted_set(name, 2, predicted_at));
  const std::vector<EmaxFit> fits = fit_gemm_e_max(sets);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].key, "e_max");
  EXPECT_FALSE(fits[0].k_overhead_fitted);
  EXPECT_DOUBLE_EQ(fits[0].k_overhead, shipped_gemm("nvidia-dgxc-benchmarking-gpt3-175b").k_overhead);
  EXPECT_FALSE(fits[0].e_attention_fitted);
  EXPECT_NEAR(fits[0].e_max, 0.6, 5e-3);
  EXPECT_LT(fits[0].mean_abs_error_pct, 0.2);
}

// Four Megatron models predicted at e_max 0.55 and k_overhead 200 on the A100 profile: the fit
// gives both back.
TEST(GemmFit, RecoversTheEmaxASyntheticSetWasPredictedWith) {
  const ValidationSet synthetic = predicted_set("megatron-lm-narayanan2021-table1", 4, [](GemmModel& g) {
    g.e_max = 0.55;
    g.k_overhead = 200;
  }, true);
  const std::vector<EmaxFit> fits = fit_gemm_e_max({synthetic});
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].device, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(fits[0].rows, 4);
  // four models of four widths: k_overhead is fitted with e_max, both recovered
  EXPECT_TRUE(fits[0].k_overhead_fitted);
  EXPECT_NEAR(fits[0].k_overhead, 200, 4);
  EXPECT_NEAR(fits[0].e_max, 0.55, 2e-3);
  EXPECT_LT(fits[0].mean_abs_error_pct, 0.1);
}

// Every third of MPT's A100 runs, eight widths (768 to 7168) over sequences of 512 to 65536
// tokens, predicted at e_max 0.7, k_overhead 300 and e_attention 0.45: the attention's share of
// each row's time differs, so the fit gives all three back.
TEST(GemmFit, RecoversTheAttentionEfficiencyOfRowsOverSeveralSequenceLengths) {
  const ValidationSet synthetic = predicted_set("llm-foundry-mpt-sequence-sweep", 17, [](GemmModel& g) {
    g.e_max = 0.7;
    g.k_overhead = 300;
    g.e_attention = 0.45;
  }, false, 3);
  const std::vector<EmaxFit> fits = fit_gemm_e_max({synthetic});
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].device, "NVIDIA A100-SXM4-80GB");
  EXPECT_TRUE(fits[0].k_overhead_fitted);
  EXPECT_TRUE(fits[0].e_attention_fitted);
  EXPECT_NEAR(fits[0].e_attention, 0.45, 5e-3);
  EXPECT_NEAR(fits[0].k_overhead, 300, 8);
  EXPECT_NEAR(fits[0].e_max, 0.7, 5e-3);
  EXPECT_LT(fits[0].mean_abs_error_pct, 0.2);
}

// Rows of one model width cannot tell k_overhead from e_max, nor rows of one attention share
// e_attention: the profile's are kept and e_max alone fitted (the fp8 fit above keeps them too).
TEST(GemmFit, OneWidthKeepsTheProfilesKOverhead) {
  const std::string set = "nvidia-dgxc-benchmarking-gpt3-175b";
  const ValidationSet synthetic = predicted_set(set, 2, [](GemmModel& g) { g.e_max = 0.6; });
  const double shipped_k = shipped_gemm(set).k_overhead;
  const std::vector<EmaxFit> fits = fit_gemm_e_max({synthetic});
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_FALSE(fits[0].k_overhead_fitted);
  EXPECT_DOUBLE_EQ(fits[0].k_overhead, shipped_k);
  EXPECT_GT(shipped_k, 0);  // so keeping it is not the same as a default of 0
  EXPECT_FALSE(fits[0].e_attention_fitted);
  EXPECT_EQ(fits[0].shipped_e_attention, shipped_gemm(set).e_attention);
  EXPECT_TRUE(fits[0].shipped_e_attention.has_value());  // so keeping it is not the same as e_max
  EXPECT_NEAR(fits[0].e_max, 0.6, 2e-4);
}

TEST(GemmFit, WritesTheFittedValueWithItsProvenance) {
  const std::string text = "gemm:\n  sm_count: 108   # whitepaper\n  e_max: 0.7    # not yet fitted\nname: x\n";
  EXPECT_EQ(site_profile_with_e_max(text, "p.yaml", 0.61234, "fitted by predict --fit on s version 1"),
            "gemm:\n  sm_count: 108   # whitepaper\n  e_max: 0.6123   # fitted by predict --fit on s version 1\nname: x\n");
  EXPECT_THROW(site_profile_with_e_max("name: x\n", "p.yaml", 0.6, "f"), UserError);
  // e_max_fp8: a new line after e_max, then replaced in place
  const std::string with_fp8 = site_profile_with_e_max(text, "p.yaml", 0.5, "fitted on f", "e_max_fp8");
  EXPECT_EQ(with_fp8, "gemm:\n  sm_count: 108   # whitepaper\n  e_max: 0.7    # not yet fitted\n"
                      "  e_max_fp8: 0.5000   # fitted on f\nname: x\n");
  // k_overhead: a whole number, a new line after e_max
  EXPECT_EQ(site_profile_with_e_max(text, "p.yaml", 431.6, "fitted on f", "k_overhead"),
            "gemm:\n  sm_count: 108   # whitepaper\n  e_max: 0.7    # not yet fitted\n"
            "  k_overhead: 432   # fitted on f\nname: x\n");
  EXPECT_EQ(site_profile_with_e_max(with_fp8, "p.yaml", 0.25, "g", "e_max_fp8"),
            "gemm:\n  sm_count: 108   # whitepaper\n  e_max: 0.7    # not yet fitted\n"
            "  e_max_fp8: 0.2500   # g\nname: x\n");
}

const FigureSummary& summary_of(const ValidationReplay& replay, const std::string& figure) {
  for (const FigureSummary& s : replay.summary)
    if (s.figure == figure) return s;
  throw std::runtime_error("no summary of " + figure);
}

ValidationReplay replay(const std::string& name) {
  return replay_validation_set(published_set(name));
}

// The mean and max |error| of one figure over a replay's rows on one site.
struct SiteErrors {
  int rows = 0;
  double mean = 0, max = 0;
};
SiteErrors errors_on(const ValidationReplay& replay, const std::string& site, const std::string& figure) {
  SiteErrors e;
  for (const RowReplay& row : replay.rows) {
    if (row.site != site) continue;
    for (const FigureComparison& f : row.figures) {
      if (f.figure != figure || !f.error_pct) continue;
      ++e.rows;
      e.mean += std::abs(*f.error_pct);
      e.max = std::max(e.max, std::abs(*f.error_pct));
    }
  }
  if (e.rows > 0) e.mean /= e.rows;
  return e;
}

// Bounds: the errors measured with the shipped GEMM constants and the profiles' NCCL figures,
// plus a margin of about one point, so a change that worsens the replay fails here. The A100's
// e_max 0.7839, k_overhead 366 and e_attention 0.3223 are fitted on its four sets (Megatron's
// Table 1, Korthikanti et al.'s runs and MPT's two), so its rows here are in sample (held out: the
// tests below); the H100's e_max 0.7329 on the NVIDIA DGX Cloud GPT-3 175B set, e_max_fp8 0.6409
// on its FP8 twin, its k_overhead and e_attention the A100's. Measured:
// - in sample: Megatron A100 tflops_per_device mean 2.7%, max 6.9%; Korthikanti et al. mean 2.9%,
//   max 7.3% (22B with sequence parallelism, predicted fast); MPT's A100 rows at sequence 2048
//   mean 2.2%, max 8.0%; MPT's A100 sequence sweep mean 4.4%, max 37.1% (30B at 8192 tokens, whose
//   published MFU falls 12 points below the same model at 4096); DGX Cloud H100 step_time_s mean
//   0.4%, max 1.1%; the DGX Cloud FP8 runs mean 1.2%, max 2.8%;
// - held out: NeMo 24.07's FP8 GPT-3 and Llama 2 rows mean 4.1%, max 6.8% (the 20B, predicted
//   slow); Megatron-Bridge's Llama 3 70B FP8 rows mean 2.7%, max 2.8%;
// - MPT's H100 rows run model.kernels sm80 (FlashAttention 1 or 2: Ampere's mma.sync), whose
//   e_max_sm80 0.6253 is fitted on both MPT sets (in sample: at sequence 2048 mean 6.0%, max
//   13.4%, the 13B at micro-batch 2; the sweep mean 8.5%, max 22.8%, the 30B at 8192 tokens;
//   held out: the tests below). On the native constants, fitted on NeMo Megatron's runs, they
//   were 37.4% and 41.1% off.
struct Bound {
  const char* set;
  const char* site;
  const char* figure;
  int rows, infeasible;
  double mean, max;
};
constexpr Bound kBounds[] = {
    {"megatron-lm-narayanan2021-table1", "a100-80gb-dgx", "tflops_per_device", 10, 0, 3.5, 8.0},
    {"megatron-lm-korthikanti2022", "a100-80gb-dgx", "step_time_s", 8, 0, 3.5, 8.0},
    {"nvidia-dgxc-benchmarking-gpt3-175b", "h100-sxm-dgx", "step_time_s", 5, 0, 1.5, 2.5},
    {"nvidia-dgxc-benchmarking-gpt3-175b-fp8", "h100-sxm-dgx", "step_time_s", 5, 0, 2.0, 4.0},
    {"llm-foundry-mpt-benchmarks", "a100-80gb-dgx", "tokens_per_s_per_device", 6, 0, 4.0, 9.5},
    {"llm-foundry-mpt-benchmarks", "h100-sxm-dgx", "tokens_per_s_per_device", 5, 0, 7.0, 14.5},
    {"llm-foundry-mpt-sequence-sweep", "a100-80gb-dgx", "tokens_per_s_per_device", 52, 0, 5.5, 38.0},
    {"llm-foundry-mpt-sequence-sweep", "h100-sxm-dgx", "tokens_per_s_per_device", 32, 0, 9.5, 24.0},
    {"nvidia-nemo-24.07-performance-summary", "h100-sxm-dgx", "tokens_per_s_per_device", 7, 0, 5.0, 7.5},
    {"nvidia-megatron-bridge-performance-summary", "h100-sxm-dgx", "tokens_per_s_per_device", 2, 0, 3.0, 3.0},
    {"pytorch-torchtitan-llama3-h100-202412", "h100-sxm-dgx", "memory_gib", 6, 0, 7.5, 13.0},
    // held out of every fit (Nemotron-4 340B is in none): measured 3.0% / 4.1% and 2.2% / 3.0%
    {"nvidia-dgxc-benchmarking-nemotron4-340b", "h100-sxm-dgx", "step_time_s", 5, 0, 3.5, 5.0},
    {"nvidia-dgxc-benchmarking-nemotron4-340b-fp8", "h100-sxm-dgx", "step_time_s", 5, 0, 2.5, 3.5},
};
TEST(ValidationReplay, ShippedSetsStayWithinTheirMeasuredErrors) {
  for (const Bound& b : kBounds) {
    const ValidationReplay r = replay(b.set);
    EXPECT_EQ(summary_of(r, b.figure).infeasible, b.infeasible) << b.set;
    const SiteErrors e = errors_on(r, b.site, b.figure);
    EXPECT_EQ(e.rows, b.rows) << b.set << " on " << b.site;
    EXPECT_LE(e.mean, b.mean) << b.set << " on " << b.site;
    EXPECT_LE(e.max, b.max) << b.set << " on " << b.site;
  }
}

// The A100's rows of one set replayed on its constants fitted on the device's other shipped sets.
SiteErrors a100_held_out(const std::string& held_out, const std::vector<std::string>& fitted_on,
                         const std::string& figure) {
  const std::vector<EmaxFit> fits = fit_on_sets(fitted_on);
  const auto a100 = std::find_if(fits.begin(), fits.end(), [](const EmaxFit& f) { return f.site == "a100-80gb-dgx"; });
  EXPECT_NE(a100, fits.end());
  if (a100 != fits.end()) EXPECT_TRUE(a100->k_overhead_fitted && a100->e_attention_fitted);
  return errors_on(replay_validation_set(published_set(held_out), fits), "a100-80gb-dgx", figure);
}

// Leave one set out on the A100: each set replayed on e_max, k_overhead and e_attention fitted
// on others (the shipped profile is fitted on all four). Issue 25's bound is a mean |error|
// within 5% and a max within 10% on a set the constants were not fitted on; the sweep's max
// misses it (its 30B at 8192 tokens: the note and validation/README.md say why) and is held to
// its measured figure plus a point.
struct HeldOut {
  const char* name;  // the test's
  const char* held_out;
  std::vector<std::string> fitted_on;
  const char* figure;
  int rows;
  double mean, max;
};
void PrintTo(const HeldOut& h, std::ostream* os) { *os << h.held_out; }
class A100LeaveOneSetOut : public ::testing::TestWithParam<HeldOut> {};

TEST_P(A100LeaveOneSetOut, StaysWithinItsBound) {
  const HeldOut& h = GetParam();
  const SiteErrors e = a100_held_out(h.held_out, h.fitted_on, h.figure);
  EXPECT_EQ(e.rows, h.rows);
  EXPECT_LE(e.mean, h.mean);
  EXPECT_LE(e.max, h.max);
}

INSTANTIATE_TEST_SUITE_P(
    ValidationReplay, A100LeaveOneSetOut,
    ::testing::Values(
        // Megatron's ten rows on MPT's two sets (widths 768 to 7168, sequences 512 to 65536).
        // Measured: mean 2.8%, max 6.3%.
        HeldOut{"Megatron", "megatron-lm-narayanan2021-table1", {"llm-foundry-mpt-benchmarks", "llm-foundry-mpt-sequence-sweep"},
                "tflops_per_device", 10, 5.0, 10.0},
        // MPT's six models at sequence 2048. Measured: mean 2.9%, max 8.3% (13B, predicted fast).
        HeldOut{"MptAtSequence2048", "llm-foundry-mpt-benchmarks", {"megatron-lm-narayanan2021-table1", "llm-foundry-mpt-sequence-sweep"},
                "tokens_per_s_per_device", 6, 5.0, 10.0},
        // MPT's 52 A100 rows of the sweep. Measured: mean 4.8%, max 35.7% (30B at 8192 tokens).
        HeldOut{"MptSequenceSweep", "llm-foundry-mpt-sequence-sweep", {"megatron-lm-narayanan2021-table1", "llm-foundry-mpt-benchmarks"},
                "tokens_per_s_per_device", 52, 5.0, 36.5},
        // Korthikanti et al.'s 22B to 1T under full recomputation and under sequence parallelism
        // with selective recomputation (tp 8, pp up to 64, interleaved) on the other three.
        // Measured: mean 3.2%, max 7.8% (22B with sequence parallelism, predicted fast).
        HeldOut{"RecomputeAndSequenceParallel", "megatron-lm-korthikanti2022",
                {"megatron-lm-narayanan2021-table1", "llm-foundry-mpt-benchmarks", "llm-foundry-mpt-sequence-sweep"},
                "step_time_s", 8, 5.0, 10.0}),
    [](const ::testing::TestParamInfo<HeldOut>& info) { return std::string(info.param.name); });

// The same on the H100 in fp8, issue 25's bound for every set: each of the three fp8 sets (the
// DGX Cloud GPT-3 175B runs, NeMo 24.07's GPT-3 and Llama 2 rows, Megatron-Bridge's Llama 3 70B
// rows) replayed on e_max_fp8 fitted on each other one and on the other two together (the
// shipped profile is the DGX Cloud fit). Measured (mean/max |error| %): DGX Cloud on NeMo 1.4/2.7,
// on Bridge 3.1/5.7, on both 3.1/5.7; NeMo on DGX Cloud 4.1/6.8, on Bridge 4.7/8.6, on both
// 4.5/7.6; Bridge on DGX Cloud 2.5/2.6, on NeMo 3.0/3.1, on both 2.6/2.7.
struct FpEightHeldOut {
  const char* held_out;
  std::vector<std::string> fitted_on;
  const char* figure;
  int rows;
};
class FpEightSetsHeldOut : public ::testing::TestWithParam<FpEightHeldOut> {};
TEST_P(FpEightSetsHeldOut, StayWithinFiveAndTenPercent) {
  const FpEightHeldOut& h = GetParam();
  const std::vector<EmaxFit> fits = fit_on_sets(h.fitted_on);
  ASSERT_EQ(fits.size(), 1u);
  EXPECT_EQ(fits[0].key, "e_max_fp8");
  const SiteErrors e = errors_on(replay_validation_set(published_set(h.held_out), fits), "h100-sxm-dgx", h.figure);
  EXPECT_EQ(e.rows, h.rows);
  EXPECT_LE(e.mean, 5.0);
  EXPECT_LE(e.max, 10.0);
}
const std::string kDgx = "nvidia-dgxc-benchmarking-gpt3-175b-fp8", kNemo = "nvidia-nemo-24.07-performance-summary",
                  kBridge = "nvidia-megatron-bridge-performance-summary",
                  kNemotron = "nvidia-dgxc-benchmarking-nemotron4-15b-fp8";
INSTANTIATE_TEST_SUITE_P(
    ValidationReplay, FpEightSetsHeldOut,
    ::testing::Values(FpEightHeldOut{kDgx.c_str(), {kNemo}, "step_time_s", 5},
                      FpEightHeldOut{kDgx.c_str(), {kBridge}, "step_time_s", 5},
                      FpEightHeldOut{kDgx.c_str(), {kNemo, kBridge}, "step_time_s", 5},
                      FpEightHeldOut{kNemo.c_str(), {kDgx}, "tokens_per_s_per_device", 7},
                      FpEightHeldOut{kNemo.c_str(), {kBridge}, "tokens_per_s_per_device", 7},
                      FpEightHeldOut{kNemo.c_str(), {kDgx, kBridge}, "tokens_per_s_per_device", 7},
                      FpEightHeldOut{kBridge.c_str(), {kDgx}, "tokens_per_s_per_device", 2},
                      FpEightHeldOut{kBridge.c_str(), {kNemo}, "tokens_per_s_per_device", 2},
                      FpEightHeldOut{kBridge.c_str(), {kDgx, kNemo}, "tokens_per_s_per_device", 2},
                      // with NVIDIA's Nemotron-4 15B FP8 runs, each set on all the others (what
                      // predict --cross-validate fits). Measured: DGX Cloud 3.1/5.7, NeMo 4.6/8.0,
                      // Bridge 2.2/2.3, Nemotron-4 1.6/2.9.
                      FpEightHeldOut{kDgx.c_str(), {kNemo, kBridge, kNemotron}, "step_time_s", 5},
                      FpEightHeldOut{kNemo.c_str(), {kDgx, kBridge, kNemotron}, "tokens_per_s_per_device", 7},
                      FpEightHeldOut{kBridge.c_str(), {kDgx, kNemo, kNemotron}, "tokens_per_s_per_device", 2},
                      FpEightHeldOut{kNemotron.c_str(), {kDgx, kNemo, kBridge}, "step_time_s", 8}));

// The H100's native 16-bit sets, NVIDIA's DGX Cloud GPT-3 175B and Nemotron-4 15B BF16 runs, each
// replayed on e_max fitted on the other (one model width each: e_max alone moves). Issue 25's
// bound. Measured (mean/max |error| %): GPT-3 175B on Nemotron-4's fit 3.2/4.2, Nemotron-4 on
// GPT-3's (the shipped e_max) 2.9/3.7.
TEST(ValidationReplay, H100SixteenBitSetsHeldOutOfEachOther) {
  const std::string gpt3 = "nvidia-dgxc-benchmarking-gpt3-175b", nemotron = "nvidia-dgxc-benchmarking-nemotron4-15b";
  for (const auto& [held_out, fitted_on] : {std::pair{gpt3, nemotron}, std::pair{nemotron, gpt3}}) {
    const std::vector<EmaxFit> fits = fit_on_sets({fitted_on});
    ASSERT_EQ(fits.size(), 1u) << fitted_on;
    EXPECT_EQ(fits[0].key, "e_max");
    EXPECT_FALSE(fits[0].k_overhead_fitted || fits[0].e_attention_fitted);
    const SiteErrors e = errors_on(replay_validation_set(published_set(held_out), fits), "h100-sxm-dgx", "step_time_s");
    EXPECT_EQ(e.rows, held_out == gpt3 ? 5 : 8) << held_out;
    EXPECT_LE(e.mean, 5.0) << held_out;
    EXPECT_LE(e.max, 10.0) << held_out;
  }
}

// The sets a profile comment's "SET version N[, SET version N ...]" names, each at that version.
std::vector<ValidationSet> sets_named(const std::string& named, const std::filesystem::path& profile) {
  std::vector<ValidationSet> sets;
  for (std::size_t from = 0; from < named.size();) {
    const std::size_t comma = std::min(named.find(", ", from), named.size());
    const std::string one = named.substr(from, comma - from);
    const std::string name = one.substr(0, one.find(" version "));
    sets.push_back(published_set(name));
    EXPECT_EQ(one, fmt::format("{} version {}", name, sets.back().version)) << profile;
    from = comma + 2;
  }
  return sets;
}

// MPT's two H100 sets, each replayed on e_max_sm80 fitted on the other (the shipped profile is
// fitted on both; e_attention_sm80 is FlashAttention-2's published H100/A100 ratio, not fitted).
// Issue 25's bound is 5% and 10%: both miss it. Measured: the rows at sequence 2048 on the
// sweep's fit (0.6645) mean 9.2%, max 18.6% (the 13B at micro-batch 2, predicted fast); the
// sweep on their fit (0.5743) mean 11.0%, max 16.6%. Held to those plus a point.
TEST(ValidationReplay, MptH100SetsHeldOutOfEachOthersSmEightyFit) {
  struct Case {
    const char* fitted_on;
    const char* held_out;
    int rows;
    double mean, max;
  };
  for (const Case& c : {Case{"llm-foundry-mpt-sequence-sweep", "llm-foundry-mpt-benchmarks", 5, 10.0, 19.5},
                        Case{"llm-foundry-mpt-benchmarks", "llm-foundry-mpt-sequence-sweep", 32, 12.0, 17.5}}) {
    const std::vector<EmaxFit> fits = fit_on_sets({c.fitted_on});
    const auto h100 = std::find_if(fits.begin(), fits.end(), [](const EmaxFit& f) { return f.site == "h100-sxm-dgx"; });
    ASSERT_NE(h100, fits.end()) << c.fitted_on;
    EXPECT_EQ(h100->key, "e_max_sm80");
    EXPECT_FALSE(h100->k_overhead_fitted || h100->e_attention_fitted);
    const SiteErrors e =
        errors_on(replay_validation_set(published_set(c.held_out), fits), "h100-sxm-dgx", "tokens_per_s_per_device");
    EXPECT_EQ(e.rows, c.rows) << c.held_out;
    EXPECT_LE(e.mean, c.mean) << c.held_out;
    EXPECT_LE(e.max, c.max) << c.held_out;
  }
}

// Each fitted line of a profile's text: its key (e_max, e_max_fp8, e_max_sm80, k_overhead,
// e_attention) and what its comment names.
std::vector<std::pair<std::string, std::string>> fitted_lines(const std::string& text) {
  const std::string marker = "# fitted by predict --fit on ";
  std::vector<std::pair<std::string, std::string>> lines;
  for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + 1)) {
    const std::size_t begin = text.find_first_not_of(' ', text.rfind('\n', at) + 1);
    lines.emplace_back(text.substr(begin, text.find(':', begin) - begin),
                       text.substr(at + marker.size(), text.find('\n', at) - at - marker.size()));
  }
  return lines;
}

// Each shipped GPU profile's gemm.e_max (and e_max_fp8, e_max_sm80) is what `predict --fit` gives on the set
// and version its comment names: a change to the cost model that moves the fit leaves no stale
// constant behind.
TEST(ValidationReplay, ShippedEmaxIsTheFitItsCommentNames) {
  int fitted = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(SB_SOURCE_DIR) + "/jobs/sites")) {
    if (entry.path().extension() != ".yaml") continue;
    std::ifstream in(entry.path());
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const SiteProfile site = load_site_profile(entry.path());
    std::map<std::string, std::vector<EmaxFit>> fits_of;  // one fit per named set, however many lines name it
    for (const auto& [key, named] : fitted_lines(text)) {
      ++fitted;
      if (!fits_of.count(named)) fits_of[named] = fit_gemm_e_max(sets_named(named, entry.path()));
      bool found = false;
      for (const EmaxFit& fit : fits_of[named]) {
        if (fit.site != site.name) continue;
        if (key == "k_overhead" && fit.key == "e_max") {  // fitted with e_max, on a set of several widths
          found = true;
          EXPECT_TRUE(fit.k_overhead_fitted) << entry.path() << ": " << named << " has one model width";
          EXPECT_DOUBLE_EQ(site.gemm->k_overhead, fit.k_overhead) << entry.path() << ": k_overhead names " << named;
        }
        if (key == "e_attention" && fit.key == "e_max") {  // fitted with e_max, on rows of several shares
          found = true;
          EXPECT_TRUE(fit.e_attention_fitted) << entry.path() << ": " << named << " gives the attention one share";
          EXPECT_NEAR(site.gemm->e_attention.value_or(-1.0), fit.e_attention, 2e-4)
              << entry.path() << ": e_attention names " << named;
        }
        if (fit.key != key) continue;
        found = true;
        const double shipped = key == "e_max"       ? site.gemm->e_max
                               : key == "e_max_sm80" ? (site.gemm->sm80 ? site.gemm->sm80->e_max : -1.0)
                                                     : site.gemm->e_max_fp8.value_or(-1.0);
        EXPECT_NEAR(shipped, fit.e_max, 2e-4) << entry.path() << ": " << key << " names " << named;
      }
      EXPECT_TRUE(found) << entry.path() << ": no row of " << named << " fits its " << key;
    }
  }
  // the A100's e_max, k_overhead and e_attention, the H100's e_max, e_max_fp8 and e_max_sm80
  EXPECT_GE(fitted, 6);
}

}  // namespace
}  // namespace sb::costmodel
