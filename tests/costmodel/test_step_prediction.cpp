// SPDX-License-Identifier: Apache-2.0
// predict_step: impossible configurations come back with a reason, the step's parts obey the
// closed forms they are built from, and the JSON carries DESIGN.md's fields. Leaves out the
// Narayanan acceptance (test_narayanan_table1.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "costmodel/closed_forms.hpp"
#include "costmodel/nccl_collectives.hpp"
#include "costmodel/prediction_json.hpp"
#include "costmodel/step_prediction.hpp"
#include "costmodel_test_support.hpp"
#include "models/gpt/gpt_config.hpp"
#include "models/gpt/gpt_flops.hpp"
#include "plan/pipeline_schedule.hpp"

namespace sb::costmodel {
namespace {

using testing::gpt_case;
using testing::site;
using testing::ring_formula;

plan::TrainConfig named(const std::string& model, std::int64_t dp, std::int64_t tp, std::int64_t pp,
                         std::int64_t global_batch) {
  plan::TrainConfig c = gpt_case(1, 1, 1, dp, tp, pp, global_batch, 1);
  c.model = plan::ModelSpec{};
  c.model.name = model;
  return c;
}

TEST(StepPrediction, TooLittleMemoryIsAReasonNotANumber) {
  const Prediction p = predict_step(named("gpt-175b", 8, 1, 1, 8), site("a100-80gb-dgx"));
  EXPECT_FALSE(p.feasible);
  EXPECT_NE(p.reason.find("needs"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("but a NVIDIA A100-SXM4-80GB has 80.0 GiB"), std::string::npos) << p.reason;
  const nlohmann::json j = prediction_json(p);
  EXPECT_EQ(j["feasible"], false);
  EXPECT_EQ(j["reason"], p.reason);
  EXPECT_TRUE(j["step_time_s"].is_null());
  EXPECT_TRUE(j["memory_bytes"].is_null());
}

TEST(StepPrediction, TensorParallelismBeyondANodeIsRefused) {
  const Prediction p = predict_step(named("gpt-175b", 1, 16, 8, 64), site("a100-80gb-dgx"));
  EXPECT_FALSE(p.feasible);
  EXPECT_NE(p.reason.find("tp = 16 exceeds the 8 devices of one node"), std::string::npos) << p.reason;
}

TEST(StepPrediction, GridThatDoesNotMatchTheDevicesIsRefused) {
  const Prediction p = predict_step(named("gpt-1.3b", 8, 1, 1, 64), site("a100-80gb-dgx"), 10);
  EXPECT_FALSE(p.feasible);
  EXPECT_NE(p.reason.find("= 8 ranks, but 10 devices"), std::string::npos) << p.reason;
  const Prediction heads = predict_step(named("gpt-1.3b", 1, 3, 1, 8), site("a100-80gb-dgx"));
  EXPECT_FALSE(heads.feasible);
  // the plan's sentence, the one `train` stops with
  EXPECT_NE(heads.reason.find("strategy.tp 3 must divide the 16 attention heads"), std::string::npos) << heads.reason;
  EXPECT_EQ(heads.refusal, Refusal::tp_heads);
}

TEST(StepPrediction, OneDeviceIsComputePlusOptimizer) {
  const SiteProfile a100 = testing::flat_site("a100-80gb-dgx");  // the closed form of the flat model
  plan::TrainConfig c = named("gpt-1.3b", 1, 1, 1, 8);
  const Prediction p = predict_step(c, a100);
  ASSERT_TRUE(p.feasible) << p.reason;
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-1.3b");
  // GEMMs at the fp16 peak, and 8 micro-batches × (24 blocks × 3 passes over Korthikanti's
  // tensors + 3 passes over the fp32 logits) at the memory bandwidth
  const double traffic = 8 * (24 * 3 * activation_bytes_per_layer(2048, 1, 2048, 16, 1, false, Recompute::none) +
                              3 * 2048.0 * 51200 * 4);
  EXPECT_NEAR(p.compute_s, gpt::gpt_training_flops(g, 8, 2048) / 312e12 + traffic / 2.039e12, 1e-9);
  // the only exchange of one device: its 16-bit main gradients, zeroed once, each micro-batch's
  // fp32 gradients added in (8 bytes a parameter), the loss scale taken out (exchange_work.hpp);
  // the trainer records that as data-parallel time too
  const double psi = static_cast<double>(gpt::gpt_parameter_count(g));
  EXPECT_NEAR(p.comm_s, (2 * psi + 8 * 8 * psi + 4 * psi) / 2.039e12, 1e-12);
  EXPECT_DOUBLE_EQ(p.comm_s, p.dp_comm_s);
  EXPECT_DOUBLE_EQ(p.bubble_s, 0.0);
  EXPECT_NEAR(p.step_time_s, p.compute_s + p.optimizer_s + p.comm_s, 1e-12);
  // mixed-precision AdamW touches 28 bytes per parameter at 2.039 TB/s
  EXPECT_NEAR(p.optimizer_s, static_cast<double>(gpt::gpt_parameter_count(g)) * 28 / 2.039e12, 1e-9);
  EXPECT_NEAR(p.mfu, gpt::gpt_training_flops(g, 8, 2048) / 312e12 / p.step_time_s, 1e-12);
  EXPECT_NEAR(p.tokens_per_s, 8 * 2048 / p.step_time_s, 1e-6);
  const nlohmann::json j = prediction_json(p);
  for (const char* key : {"feasible", "reason", "step_time_s", "compute_s", "comm_s", "bubble_s",
                          "optimizer_s", "tokens_per_s", "tflops_per_device", "mfu", "memory_bytes", "stages",
                          "stage_rule", "micro_batches", "micro_batch", "cost_per_hour", "currency", "hfu",
                          "mfu_convention", "peak_flops", "peak_flops_precision", "peak_flops_source",
                          "tp_algorithm", "dp_algorithm", "tp_comm_s", "p2p_s", "dp_comm_s", "nodes",
                          "ranks_per_node", "tp_link", "dp_link", "pp_link", "kernels", "calibrated"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j.size(), 34u);
  EXPECT_EQ(j["calibrated"], false);  // no gemm: model left: the GEMMs at the datasheet peak, as above
  EXPECT_EQ(j["kernels"], "native");  // model.kernels: the GEMM constants the prediction ran on
  // one device: one node, and no group that talks over any link
  EXPECT_EQ(j["nodes"].get<int>(), 1);
  for (const char* link : {"tp_link", "dp_link", "pp_link"}) EXPECT_EQ(j[link].get<std::string>(), "none") << link;
  // the MFU names its convention and the dense peak it divides by, with that peak's source
  EXPECT_EQ(j["mfu_convention"].get<std::string>(), kMfuConvention);
  EXPECT_DOUBLE_EQ(j["peak_flops"].get<double>(), 312e12);
  EXPECT_EQ(j["peak_flops_precision"].get<std::string>(), "fp16");
  const std::string source = j["peak_flops_source"].get<std::string>();
  EXPECT_NE(source.find("A100 Tensor Core GPU datasheet"), std::string::npos) << source;
  EXPECT_NE(source.find("peak_flops.fp16, dense"), std::string::npos) << source;
  EXPECT_NEAR(p.hfu / p.mfu, 1.0, 1e-9);  // no recomputation: executed = model FLOPs
  // full recomputation runs every block's forward twice: HFU counts it, MFU does not
  c.strategy.recompute = "full";
  const Prediction recomputed = predict_step(c, a100);
  ASSERT_TRUE(recomputed.feasible) << recomputed.reason;
  EXPECT_GT(recomputed.hfu, 1.25 * recomputed.mfu);
  EXPECT_LT(recomputed.hfu, 4.0 / 3.0 * recomputed.mfu + 1e-12);
  EXPECT_EQ(j["stages"], nlohmann::json::array({24}));
  EXPECT_EQ(j["micro_batches"].get<std::int64_t>(), 8);
  for (const char* key : {"params", "grads", "optimizer", "activations", "total"})
    EXPECT_TRUE(j["memory_bytes"].contains(key)) << key;
  EXPECT_DOUBLE_EQ(j["memory_bytes"]["total"].get<double>(), p.memory.total());
}

TEST(StepPrediction, PipelineBubbleIsTheClosedForm) {
  plan::TrainConfig c = gpt_case(8, 1024, 16, 1, 1, 4, 8, 1);
  c.model.vocab = 256;
  const Prediction p = predict_step(c, site("a100-80gb-dgx"));
  ASSERT_TRUE(p.feasible) << p.reason;
  EXPECT_EQ(p.micro_batches, 8);
  // the simulated step (test_step_simulation.cpp checks the closed form exactly with balanced
  // stages and free messages): messages on the critical path and the embedding and head make
  // the idle share a little larger than (p−1)/(m+p−1), never smaller
  // (dp 1: dp_comm_s is the 16-bit main gradients' accumulation inside each backward)
  const double fraction = p.bubble_s / (p.compute_s + p.tp_comm_s + p.p2p_s + p.dp_comm_s + p.bubble_s);
  EXPECT_GE(fraction, pipeline_bubble_fraction(4, 8));
  EXPECT_NEAR(fraction, pipeline_bubble_fraction(4, 8), 0.01);
  EXPECT_GT(p.p2p_s, 0.0);
  // interleaving simulated: 8 chunks of one block, the bubble about halved (Narayanan et al.),
  // a little more than half since twice as many messages cross the critical path
  c.strategy.interleave = 2;
  const Prediction interleaved = predict_step(c, site("a100-80gb-dgx"));
  ASSERT_TRUE(interleaved.feasible) << interleaved.reason;
  EXPECT_NEAR(interleaved.bubble_s / p.bubble_s, 0.5, 0.1);
  EXPECT_LT(interleaved.step_time_s, p.step_time_s);
}

// Fused attention is a framework's layout (Korthikanti et al.'s count), which allocates as it
// goes: under an interleaved pipeline a rank holds the peak over its op order of what is in
// flight, not the sum of each chunk's own peak (the trainer's pool per chunk). p 2, v 2, m 8:
// Megatron-LM's interleaved 1F1B runs (p − 1)·2 + (v − 1)·p = 4 warm-up forwards on rank 0, so
// 5 chunk micro-batches are held at once, each 2 blocks of 34·s·b·h bytes in 16 bits.
TEST(StepPrediction, InterleavedActivationsPeakOverTimeWhereTheFrameworkAllocatesAsItGoes) {
  plan::TrainConfig c = gpt_case(8, 1024, 16, 1, 1, 2, 8, 1);
  c.model.vocab = 256;
  c.model.attention = "flash";
  c.strategy.interleave = 2;
  c.strategy.stages = {2, 2, 2, 2};
  const Prediction p = predict_step(c, site("a100-80gb-dgx"));
  ASSERT_TRUE(p.feasible) << p.reason;
  const double block = 34.0 * 2048 * 1 * 1024;
  EXPECT_NEAR(p.rank_memory[0].activations, 5 * 2 * block, 1e-6 * block);
  std::int64_t chunk_peaks = 0;
  for (std::int64_t chunk = 0; chunk < 2; ++chunk)
    chunk_peaks += plan::pipeline_chunk_peak_in_flight(plan::PipelineSchedule::one_f_one_b, 2, 0, 8, 2, chunk);
  EXPECT_GT(static_cast<double>(chunk_peaks) * 2 * block, p.rank_memory[0].activations);
}

TEST(StepPrediction, ZeroMemoryOfTheSevenAndAHalfBillionModel) {
  // Narayanan et al.'s 7.5B shape on 64 replicas, as in the ZeRO paper's example
  const SiteProfile a100 = site("a100-80gb-dgx");
  const double psi = static_cast<double>(gpt::gpt_parameter_count(gpt::GptConfig{"7.5b", 36, 4096, 32, 2048, 51200}));
  EXPECT_NEAR(psi / 7.5e9, 1.0, 0.01);
  const double paper_gb[4] = {120.0, 31.4, 16.6, 1.9};
  for (int stage = 0; stage <= 3; ++stage) {
    plan::TrainConfig c = gpt_case(36, 4096, 32, 64, 1, 1, 64, 1);
    c.strategy.zero = stage;
    const Prediction p = predict_step(c, a100);
    const ModelStateBytes expected = zero_model_state_bytes(psi, 64, stage);
    if (stage == 0) {  // 120 GB of model states do not fit 80 GiB
      EXPECT_FALSE(p.feasible);
      EXPECT_NE(p.reason.find("needs 1"), std::string::npos) << p.reason;
    } else {
      ASSERT_TRUE(p.feasible) << p.reason;
    }
    EXPECT_DOUBLE_EQ(p.memory.params, expected.params);
    EXPECT_DOUBLE_EQ(p.memory.grads, expected.grads);
    EXPECT_DOUBLE_EQ(p.memory.optimizer, expected.optimizer);
    const double states_gb = (p.memory.params + p.memory.grads + p.memory.optimizer) / 1e9;
    EXPECT_NEAR(states_gb / paper_gb[stage], 1.0, 0.02) << "stage " << stage << ": " << states_gb;
  }
}

TEST(StepPrediction, RecomputationTradesMemoryForCompute) {
  const SiteProfile a100 = site("a100-80gb-dgx");
  plan::TrainConfig c = named("gpt-13b", 1, 8, 1, 8);
  const Prediction none = predict_step(c, a100);
  c.strategy.recompute = "selective";
  const Prediction selective = predict_step(c, a100);
  c.strategy.recompute = "full";
  const Prediction full = predict_step(c, a100);
  ASSERT_TRUE(none.feasible && selective.feasible && full.feasible);
  EXPECT_LT(full.memory.activations, selective.memory.activations);
  EXPECT_LT(selective.memory.activations, none.memory.activations);
  EXPECT_GT(full.compute_s, selective.compute_s);
  EXPECT_GT(selective.compute_s, none.compute_s);
  // recomputation is executed work but not model work: MFU falls, TFLOP/s counts it
  EXPECT_LT(full.mfu, none.mfu);
  EXPECT_NEAR(full.executed_flops_per_step / full.model_flops_per_step, 4.0 / 3.0, 0.02);
  c.strategy.sequence_parallel = true;
  c.strategy.recompute = "none";
  EXPECT_LT(predict_step(c, a100).memory.activations, none.memory.activations);
}

// PyTorch's non-reentrant checkpoint stops a block's recomputation once the backward's tensors
// are rebuilt (strategy.recompute_early_stop): the MLP's down projection is not rerun, so the
// executed FLOPs fall by exactly its FLOPs in every block of every micro-batch, the step by its
// seconds, and the model FLOPs and memory stay; without recompute full it is a config error.
TEST(StepPrediction, EarlyStoppedRecomputationSkipsEachBlocksDownProjection) {
  const SiteProfile a100 = site("a100-80gb-dgx");
  plan::TrainConfig c = named("gpt-13b", 1, 8, 1, 8);
  c.strategy.recompute = "full";
  const Prediction full = predict_step(c, a100);
  c.strategy.recompute_early_stop = true;
  const Prediction early = predict_step(c, a100);
  ASSERT_TRUE(full.feasible && early.feasible);
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-13b");
  ASSERT_GT(c.micro_batch, 0);
  const double B = static_cast<double>(c.micro_batch), T = static_cast<double>(g.max_seq_len);
  const double down = 2.0 * B * T * static_cast<double>(g.channels) * static_cast<double>(gpt::gpt_mlp_width(g));
  const double micro_batches = static_cast<double>(c.global_batch / c.strategy.dp / c.micro_batch);
  EXPECT_NEAR(full.executed_flops_per_step - early.executed_flops_per_step,
              down * static_cast<double>(g.layers) * micro_batches, 1e-6 * down);
  EXPECT_DOUBLE_EQ(early.model_flops_per_step, full.model_flops_per_step);
  EXPECT_DOUBLE_EQ(early.memory.total(), full.memory.total());
  EXPECT_LT(early.step_time_s, full.step_time_s);
  c.strategy.recompute = "none";
  c.strategy.recompute_early_stop = false;
  EXPECT_LT(predict_step(c, a100).step_time_s, early.step_time_s);
  c.strategy.recompute = "selective";
  c.strategy.recompute_early_stop = true;
  try {
    predict_step(c, a100);
    ADD_FAILURE() << "recompute_early_stop with recompute selective was predicted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("strategy.recompute_early_stop stops a block's recomputed forward early; "
                                         "it needs strategy.recompute full (got selective)"),
              std::string::npos)
        << e.what();
  }
}

// The collective after the skipped down projection is not rerun either: without sequence
// parallelism the early-stopped recomputation adds one of the forward's two all-reduces per
// block; with it, the attention's pair and the MLP's all-gather alone, between one and two pairs.
TEST(StepPrediction, EarlyStoppedRecomputationSkipsTheDownProjectionsCollective) {
  const SiteProfile a100 = site("a100-80gb-dgx");
  for (const bool sequence_parallel : {false, true}) {
    plan::TrainConfig c = named("gpt-13b", 1, 8, 1, 8);
    c.strategy.sequence_parallel = sequence_parallel;
    const auto tp_seconds = [&](const std::string& recompute, bool early_stop) {
      c.strategy.recompute = recompute;
      c.strategy.recompute_early_stop = early_stop;
      const Prediction p = predict_step(c, a100);
      EXPECT_TRUE(p.feasible) << p.reason;
      return p.tp_comm_s;
    };
    const double none = tp_seconds("none", false), full = tp_seconds("full", false) - none,
                 early = tp_seconds("full", true) - none;
    ASSERT_GT(full, 0.0);
    if (!sequence_parallel) {
      EXPECT_NEAR(early, 0.5 * full, 1e-9 * full);
    } else {  // a pair and an all-gather of two pairs: about three quarters
      EXPECT_GT(early, 0.6 * full);
      EXPECT_LT(early, 0.9 * full);
    }
  }
}

// ZeRO-2 and 3 give each micro-batch's reduced gradient pages back and fault them in again: a
// calibrated per-page cost adds the stage's gradient pages to every backward; ZeRO-1 pays none,
// and ZeRO-3's parameter gathers, on top, make it slower than ZeRO-1 (whose one reduction after
// backward and one gather after the optimizer are exposed, where ZeRO-3's hide behind compute).
TEST(StepPrediction, ZeroStagesPayForTheirGradientPagesAndGathers) {
  SiteProfile a100 = site("a100-80gb-dgx");
  plan::TrainConfig c = named("gpt-1.3b", 8, 1, 1, 8);
  c.precision.main_grads = "fp32";
  const auto step_with = [&](int zero, std::optional<double> refault) {
    a100.page_refault_s = refault;
    c.strategy.zero = zero;
    const Prediction p = predict_step(c, a100);
    EXPECT_TRUE(p.feasible) << p.reason;
    return p;
  };
  const double refault = 2e-6;
  const double psi = static_cast<double>(gpt::gpt_parameter_count(gpt::gpt_config_by_name("gpt-1.3b")));
  const double micro_batches = 1.0;  // global 8 over dp 8, micro-batch 1
  EXPECT_NEAR(step_with(2, refault).compute_s - step_with(2, std::nullopt).compute_s,
              micro_batches * 4.0 * psi / 4096.0 * refault, 1e-9);
  EXPECT_EQ(step_with(1, refault).compute_s, step_with(1, std::nullopt).compute_s);
  EXPECT_GT(step_with(3, refault).step_time_s, step_with(1, refault).step_time_s);
  // 16-bit main gradients without ZeRO: backward's fp32 pages, given back as they are added in
  c.precision.main_grads = "storage";
  EXPECT_NEAR(step_with(0, refault).compute_s - step_with(0, std::nullopt).compute_s,
              micro_batches * 4.0 * psi / 4096.0 * refault, 1e-9);
  c.precision.dtype = "fp32";  // fp32 storage is fp32 main gradients: nothing given back
  EXPECT_EQ(step_with(0, refault).compute_s, step_with(0, std::nullopt).compute_s);
}

// The exchange's own passes over the gradients priced at nothing: what dp_comm_s has left is
// the collectives.
SiteProfile free_memory_passes(SiteProfile s) {
  s.memory_bandwidth = std::numeric_limits<double>::infinity();
  return s;
}

TEST(StepPrediction, DataParallelOverlapHidesPartOfTheAllReduce) {
  const SiteProfile a100 = free_memory_passes(site("a100-80gb-dgx"));
  plan::TrainConfig c = named("gpt-1.3b", 16, 1, 1, 64);
  c.strategy.overlap = false;
  const Prediction exposed = predict_step(c, a100);
  c.strategy.overlap = true;
  const Prediction hidden = predict_step(c, a100);
  ASSERT_TRUE(exposed.feasible && hidden.feasible);
  // 16 ranks over 2 nodes, 8 on each: NCCL's ring over the node's 8 HDR rails (the
  // profile's published figures), chosen over the tree for 2.6 GB
  const double psi = static_cast<double>(gpt::gpt_parameter_count(gpt::gpt_config_by_name("gpt-1.3b")));
  const CollectiveTime nccl = nccl_collective(parallel::Collective::all_reduce, 2 * psi, collective_group(16, 1, 8),
                                              *a100.intra_node.nccl, *a100.inter_node.nccl);
  EXPECT_EQ(nccl.algorithm, NcclAlgorithm::ring);
  EXPECT_NEAR(exposed.dp_comm_s, nccl.seconds, 1e-12);
  EXPECT_LT(hidden.dp_comm_s, exposed.dp_comm_s);
  EXPECT_GT(hidden.dp_comm_s, 0.0);
  // the ring formula over the datasheet's 25 GB/s per device when the figures are set aside
  c.strategy.overlap = false;
  const Prediction formula = predict_step(c, ring_formula(a100));
  EXPECT_NEAR(formula.dp_comm_s, ring_all_reduce_seconds(2 * psi, 16, {25e9, 5e-6}), 1e-12);
  EXPECT_EQ(formula.dp_algorithm, "ring-formula");
}

// ZeRO-2 and 3 reduce each micro-batch's gradients: without overlap every one of four
// micro-batches' reductions waits for its backward, so where compute is free the step carries
// four reductions of what ZeRO-0 reduces once (its one all-reduce of the accumulated
// gradients; both all-reduce the fp32 gradients), and ZeRO-2 then all-gathers the updated
// parameters (fp32: as many bytes, half an all-reduce's time). ZeRO-1 reduce-scatters once.
TEST(StepPrediction, ShardedGradientsAreReducedInEveryMicroBatch) {
  SiteProfile a100 = free_memory_passes(site("a100-80gb-dgx"));
  a100.peak_flops = {{"fp32", std::numeric_limits<double>::infinity()}};
  plan::TrainConfig c = gpt_case(4, 1024, 16, 16, 1, 1, 64, 1, "fp32", 51200, 128);  // 4 micro-batches
  c.strategy.overlap = false;
  const auto dp_comm = [&](int zero) {
    c.strategy.zero = zero;
    const Prediction p = predict_step(c, a100);
    EXPECT_TRUE(p.feasible) << p.reason;
    EXPECT_EQ(p.micro_batches, 4);
    return p.dp_comm_s;
  };
  const double once = dp_comm(0);
  EXPECT_GT(once, 0.0);
  const double psi = static_cast<double>(gpt::gpt_parameter_count(plan::gpt_config_of(c)));
  const double gather = nccl_collective(parallel::Collective::all_gather, 4 * psi, collective_group(16, 1, 8),
                                        *a100.intra_node.nccl, *a100.inter_node.nccl).seconds;
  EXPECT_NEAR(dp_comm(2), 4 * once + gather, 1e-9);
  EXPECT_GT(dp_comm(3), 4 * once);  // and the parameters' gathers
  EXPECT_LT(dp_comm(1), 2 * once);
}

// Where the trainer found its ranks decides the link: the same 16 ranks at 4 per node (four
// nodes) all-reduce as NCCL does over 4 nodes, while the site's own filling (8 per node) puts them
// on 2; 16 ranks on one node stay on NVLink.
TEST(StepPrediction, ObservedPlacementChoosesTheLinks) {
  const SiteProfile a100 = free_memory_passes(site("a100-80gb-dgx"));
  plan::TrainConfig c = named("gpt-1.3b", 16, 1, 1, 64);
  c.strategy.overlap = false;
  const Prediction filled = predict_step(c, a100);
  const RankPlacement four_nodes{4, 4};
  const Prediction spread = predict_step(c, a100, 0, &four_nodes);
  ASSERT_TRUE(filled.feasible && spread.feasible);
  EXPECT_EQ(filled.nodes, 2);
  EXPECT_FALSE(filled.placement_observed);
  EXPECT_EQ(spread.nodes, 4);
  EXPECT_EQ(spread.ranks_per_node, 4);
  EXPECT_EQ(spread.dp_link, "inter_node");
  const double psi = static_cast<double>(gpt::gpt_parameter_count(gpt::gpt_config_by_name("gpt-1.3b")));
  const CollectiveTime over_four = nccl_collective(parallel::Collective::all_reduce, 2 * psi,
                                                   collective_group(16, 1, 4), *a100.intra_node.nccl,
                                                   *a100.inter_node.nccl);
  EXPECT_NEAR(spread.dp_comm_s, over_four.seconds, 1e-12);
  EXPECT_NE(spread.dp_comm_s, filled.dp_comm_s);
  const RankPlacement one_node{1, 16};
  const Prediction packed = predict_step(c, a100, 0, &one_node);
  EXPECT_EQ(packed.dp_link, "intra_node");
  EXPECT_EQ(packed.tp_link, "none");
  EXPECT_LT(packed.dp_comm_s, filled.dp_comm_s);
}

TEST(StepPrediction, TensorParallelCollectivesTakeNvlsOnAWholeDgxH100) {
  const SiteProfile h100 = site("h100-sxm-dgx");
  plan::TrainConfig c = gpt_case(8, 4096, 32, 2, 8, 1, 8, 1, "bf16");
  const Prediction p = predict_step(c, h100);
  ASSERT_TRUE(p.feasible) << p.reason;
  EXPECT_EQ(p.tp_algorithm, "nvls");
  // dp 2 with stride 8: one rank on each of two nodes, one rail each way
  EXPECT_FALSE(p.dp_algorithm.empty());
  // an activation all-reduce (b 1, s 2048, h 4096, bf16) per tp collective, exposed (not
  // overlapped): the tp time is a whole number of them
  const double one = nccl_collective(parallel::Collective::all_reduce, 2048.0 * 4096 * 2, CollectiveGroup{8, 1, 8},
                                     *h100.intra_node.nccl, *h100.inter_node.nccl).seconds;
  const double calls = p.tp_comm_s / one;
  EXPECT_GT(calls, 0.5);
  EXPECT_NEAR(calls, std::round(calls), 1e-6);
  // tp 4 is not the whole node: no NVLS
  c.strategy.tp = 4;
  c.strategy.dp = 4;
  const Prediction four = predict_step(c, h100);
  ASSERT_TRUE(four.feasible) << four.reason;
  EXPECT_NE(four.tp_algorithm, "nvls");
}

TEST(StepPrediction, Resnet50AnswersInSamples) {
  plan::TrainConfig c = named("resnet-50", 8, 1, 1, 256);
  c.data.dataset = "mnist";
  const Prediction p = predict_step(c, site("a100-80gb-dgx"));
  ASSERT_TRUE(p.feasible) << p.reason;
  const nlohmann::json j = prediction_json(p);
  EXPECT_TRUE(j.contains("samples_per_s"));
  EXPECT_FALSE(j.contains("tokens_per_s"));
  EXPECT_NEAR(p.samples_per_s, 256 / p.step_time_s, 1e-9);
  c.strategy.tp = 2;
  c.strategy.dp = 4;
  EXPECT_FALSE(predict_step(c, site("a100-80gb-dgx")).feasible);
}

// A framework's layout (fused attention): under recomputation each block keeps what the mode
// keeps, and the block being recomputed holds its dropped tensors once beside them (Korthikanti
// et al.'s no-recompute count less what is kept: 34 − 2 = 32·sbh under full); the last stage
// keeps the final norm's and the head's 16-bit inputs (2·sbh bytes each) and its logits' fp32
// softmax (4 bytes a logit) with, while the loss runs and no block's scratch is held, their
// 16-bit copy (2 bytes).
TEST(StepPrediction, RecomputedBlockHoldsItsDroppedTensorsOnceBesideTheKeptOnes) {
  plan::TrainConfig c = gpt_case(8, 1024, 16, 1, 1, 1, 4, 4, "bf16", 256, 2048);
  c.model.attention = "flash";
  const SiteProfile a100 = site("a100-80gb-dgx");
  const double sbh = 2048.0 * 4 * 1024, logits = 4.0 * 2048 * 256, head = 2 * 2 * sbh;
  const auto activations = [&](const char* recompute) {
    c.strategy.recompute = recompute;
    const Prediction p = predict_step(c, a100);
    EXPECT_TRUE(p.feasible) << p.reason;
    return p.memory.activations;
  };
  EXPECT_DOUBLE_EQ(activations("none"), 8 * 34 * sbh + head + 4 * logits + 2 * logits);
  // flash keeps what selective keeps: nothing is dropped, so no scratch
  EXPECT_DOUBLE_EQ(activations("selective"), 8 * 34 * sbh + head + 4 * logits + 2 * logits);
  EXPECT_DOUBLE_EQ(activations("full"), 8 * 2 * sbh + head + 4 * logits + 32 * sbh);
}

// model.cross_entropy unfused (PyTorch's F.cross_entropy on upcast logits), counted as PyTorch's
// caching allocator reserves it: the same fp32 log-softmax kept, but in the backward its output's
// and input's fp32 gradients beside it and the 16-bit logits' freed block still cached (8 + 2
// bytes a logit) where the fused loss holds 2; more passes over the logits, so a slower step.
// Over tp ranks (PyTorch's loss_parallel, decomposed) 12 + 2 beside it, and the column-parallel
// head keeps its all-gathered input where Megatron-LM keeps the sequence shard.
TEST(StepPrediction, UnfusedCrossEntropyHoldsWhatPyTorchReservesAtItsPeak) {
  plan::TrainConfig c = gpt_case(2, 1024, 16, 1, 1, 1, 4, 4, "bf16", 51200, 2048);
  c.model.attention = "flash";
  const SiteProfile a100 = site("a100-80gb-dgx");
  const Prediction fused = predict_step(c, a100);
  c.model.cross_entropy = "unfused";
  const Prediction unfused = predict_step(c, a100);
  ASSERT_TRUE(fused.feasible && unfused.feasible);
  const double logits = 4.0 * 2048 * 51200;
  EXPECT_DOUBLE_EQ(unfused.memory.activations - fused.memory.activations, (10 - 2) * logits);
  EXPECT_GT(unfused.compute_s, fused.compute_s);
  // two tp ranks with sequence parallelism: half the logits each, and the head's input and each
  // of the 2 blocks' two norm outputs (4 × 2048 × 1024 in bf16 each) gathered rather than halved
  c.strategy.tp = 2;
  c.strategy.sequence_parallel = true;
  const Prediction parallel_unfused = predict_step(c, a100);
  c.model.cross_entropy = "fused";
  const Prediction parallel_fused = predict_step(c, a100);
  ASSERT_TRUE(parallel_fused.feasible && parallel_unfused.feasible);
  const double boundary = 4.0 * 2048 * 1024 * 2;
  EXPECT_DOUBLE_EQ(parallel_unfused.memory.activations - parallel_fused.memory.activations,
                   (14 - 2) * logits / 2 + (1 + 2 * 2) * boundary / 2);
  // the activations unfused holds beyond fused, in the same case otherwise
  const auto unfused_beyond_fused = [&](plan::TrainConfig k) {
    k.model.cross_entropy = "fused";
    const Prediction fused_k = predict_step(k, a100);
    k.model.cross_entropy = "unfused";
    const Prediction unfused_k = predict_step(k, a100);
    EXPECT_TRUE(fused_k.feasible && unfused_k.feasible) << fused_k.reason << unfused_k.reason;
    return unfused_k.memory.activations - fused_k.memory.activations;
  };
  // under full recomputation the blocks keep their input only; the block being recomputed holds
  // its gathered norm outputs once
  c.strategy.recompute = "full";
  EXPECT_DOUBLE_EQ(unfused_beyond_fused(c),
                   (14 - 2) * logits / 2 + boundary / 2);  // the loss's working bytes outweigh the scratch
  // with 256 logits a token the recompute scratch outweighs the loss: it holds the two gathered
  // norm outputs' other half beside Megatron-LM's 32·sbh/t
  plan::TrainConfig small = c;
  small.model.vocab = 256;
  EXPECT_DOUBLE_EQ(unfused_beyond_fused(small), 2 * boundary / 2 + boundary / 2);
  c.strategy.recompute = "none";
  EXPECT_GT(parallel_unfused.compute_s, parallel_fused.compute_s);
  // fp32: the fused loss upcasts nothing and takes its gradient in place; nothing 16-bit is cached
  c.model.cross_entropy = "fused";
  c.strategy.tp = 1;
  c.strategy.sequence_parallel = false;
  c.precision.dtype = "fp32";
  const Prediction fp32_fused = predict_step(c, a100);
  c.model.cross_entropy = "unfused";
  const Prediction fp32_unfused = predict_step(c, a100);
  EXPECT_DOUBLE_EQ(fp32_unfused.memory.activations - fp32_fused.memory.activations, 8 * logits);
}

// ZeRO-3 gathers each unit whole before it runs, the next one prefetched behind it, and reduces
// one unit's whole gradient at a time: two 16-bit copies and one gradient of the largest unit
// (gpt-1.3b's embedding, wte and wpe) in the comm category; none under ZeRO-1 or over one rank.
TEST(StepPrediction, ZeroThreeHoldsTwoGatheredUnitsAndOneWholeGradient) {
  const SiteProfile a100 = site("a100-80gb-dgx");
  plan::TrainConfig c = named("gpt-1.3b", 8, 1, 1, 8);
  c.model.attention = "flash";
  c.strategy.zero = 3;
  const gpt::GptConfig g = gpt::gpt_config_by_name("gpt-1.3b");
  const double embedding = static_cast<double>(gpt::gpt_embedding_parameter_count(g));
  ASSERT_GT(embedding, static_cast<double>(gpt::gpt_block_parameter_count(g)));
  const Prediction zero3 = predict_step(c, a100);
  ASSERT_TRUE(zero3.feasible) << zero3.reason;
  EXPECT_DOUBLE_EQ(zero3.memory.comm, embedding * (2 * 2 + 2));  // fp16 weights, 16-bit main gradients
  EXPECT_DOUBLE_EQ(zero3.memory.total(), zero3.memory.params + zero3.memory.grads + zero3.memory.optimizer +
                                             zero3.memory.activations + zero3.memory.comm);
  c.strategy.zero = 1;
  EXPECT_EQ(predict_step(c, a100).memory.comm, 0.0);
  // under pipeline parallelism the rank's parameters stay gathered through the step and their
  // whole gradient accumulates over the micro-batches: 2 + 2 bytes a parameter of the stage,
  // beside torch.distributed.pipelining's receive buffers (TorchPipelining test below)
  c = named("gpt-1.3b", 4, 1, 2, 32);
  c.model.attention = "flash";
  c.strategy.zero = 3;
  const Prediction piped = predict_step(c, a100);
  ASSERT_TRUE(piped.feasible) << piped.reason;
  const double receive_buffers = piped.micro_batches * piped.micro_batch * 2048.0 * 2048 * 2;  // one boundary each
  for (const RankMemory& rank : piped.rank_memory)  // params: the 1/4 shard
    EXPECT_NEAR(rank.comm - receive_buffers, rank.params * 4 * (2 + 2) / 2, 1e-6 * rank.comm);
  c = named("gpt-1.3b", 1, 1, 1, 1);
  c.model.attention = "flash";
  c.strategy.zero = 3;
  EXPECT_EQ(predict_step(c, a100).memory.comm, 0.0);
}

// A framework runs one chunk's backward at a time, so an interleaved rank holds the recompute
// scratch of one chunk, not of each: rank 0 (chunks 0 and 2, no loss) holds the gathered norm
// outputs PyTorch's tensor parallelism adds to the scratch once.
TEST(StepPrediction, InterleavedRankHoldsOneChunksRecomputeScratch) {
  const SiteProfile a100 = site("a100-80gb-dgx");
  plan::TrainConfig c = gpt_case(4, 1024, 16, 1, 2, 2, 4, 1, "bf16", 256, 2048);
  c.model.attention = "flash";
  c.strategy.recompute = "full";
  c.strategy.sequence_parallel = true;
  c.strategy.schedule = "1f1b";
  c.strategy.interleave = 2;
  const Prediction megatron = predict_step(c, a100);
  c.model.cross_entropy = "unfused";
  const Prediction pytorch = predict_step(c, a100);
  ASSERT_TRUE(megatron.feasible && pytorch.feasible) << megatron.reason << pytorch.reason;
  const double gathered_norm_outputs = 2 * (1.0 * 2048 * 1024 * 2) / 2;
  EXPECT_DOUBLE_EQ(pytorch.rank_memory[0].activations - megatron.rank_memory[0].activations, gathered_norm_outputs);
}

// ZeRO-3 over pipeline stages is FSDP under torch.distributed.pipelining, whose PipelineStage
// allocates a receive buffer for every micro-batch of the step (a stage after the first: its
// input; one before the last: its output's gradient) and keeps each micro-batch's output for its
// backward: on four stages of gpt-1.3b the first and last stage hold m boundaries of buffers, the
// middle ones 2m; against the same layout under ZeRO-1 (Megatron-LM's pipeline, which sends and
// frees) every stage but the last keeps one boundary more per micro-batch in flight (its output)
// and every stage but the first one less (its first block's input is its receive buffer).
TEST(StepPrediction, TorchPipeliningHoldsAReceiveBufferPerMicroBatchAndEachOutputInFlight) {
  const SiteProfile a100 = site("a100-80gb-dgx");
  plan::TrainConfig c = named("gpt-1.3b", 2, 1, 4, 32);
  c.model.attention = "flash";
  c.strategy.recompute = "full";
  c.strategy.schedule = "1f1b";
  c.strategy.zero = 1;
  const Prediction megatron = predict_step(c, a100);
  c.strategy.zero = 3;
  const Prediction torch = predict_step(c, a100);
  ASSERT_TRUE(megatron.feasible && torch.feasible) << megatron.reason << torch.reason;
  ASSERT_EQ(torch.rank_memory.size(), 4u);
  const double boundary = torch.micro_batch * 2048.0 * 2048 * 2, m = torch.micro_batches;
  for (std::size_t stage = 0; stage < 4; ++stage) {
    const RankMemory& z1 = megatron.rank_memory[stage];
    const RankMemory& z3 = torch.rank_memory[stage];
    const double receive = (stage > 0 ? m : 0.0) + (stage < 3 ? m : 0.0);
    EXPECT_NEAR(z3.comm - z3.params * 2 * (2 + 2) / 2, receive * boundary, 1e-6 * z3.comm) << stage;  // params: the 1/2 shard
    const double in_flight = std::min<double>(m, 4 - static_cast<double>(stage));  // 1F1B
    const double kept = (stage < 3 ? in_flight : 0.0) - (stage > 0 ? in_flight : 0.0);
    EXPECT_NEAR(z3.activations - z1.activations, kept * boundary, 1e-6 * z3.activations) << stage;
  }
}

}  // namespace
}  // namespace sb::costmodel
