// SPDX-License-Identifier: Apache-2.0
// resolve_run_plan: the micro-batch plan, the stage rules (a list, balanced by FLOPs, even),
// the micro-batches each stage holds, and each refusal with its kind. Leaves out the trainer
// and the cost model (test_plan_of_every_case.cpp compares them with it).
#include <gtest/gtest.h>

#include <numeric>

#include "core/check.hpp"
#include "plan/config.hpp"
#include "plan/pipeline_schedule.hpp"
#include "plan/run_plan.hpp"

namespace sb::plan {
namespace {

TrainConfig config_of(const std::string& yaml) {
  return parse_train_config(parse_yaml_text(yaml, "case.yaml"), "case.yaml");
}

const std::string kGpt2 = "model: gpt2-124m\ndata: {dataset: sotu}\nseq_len: 64\nbatch: {global: 8, micro: 2}\n";

TEST(RunPlan, MicroBatchPlanOfTheBatchKeys) {
  const RunPlan p = resolve_run_plan(config_of(kGpt2 + "strategy: {dp: 2}\n"));
  ASSERT_TRUE(p.feasible) << p.reason;
  EXPECT_EQ(p.local_batch, 4);
  EXPECT_EQ(p.micro_batch, 2);
  EXPECT_EQ(p.micro_batches, 2);
  EXPECT_EQ(p.seq_len, 64);
  EXPECT_EQ(p.world_size, 2);
  const RunPlan by_count = resolve_run_plan(config_of(
      "model: gpt-nano\ndata: {dataset: sotu}\nbatch: {global: 12}\nstrategy: {dp: 3, micro_batches: 2}\n"));
  ASSERT_TRUE(by_count.feasible) << by_count.reason;
  EXPECT_EQ(by_count.micro_batch, 2);
  EXPECT_EQ(by_count.seq_len, 64);  // the model's maximum
}

// gpt2-124m at T 64: a block is ~14.4 MFLOP per token, the tied head 2·768·50304 ≈ 77 MFLOP,
// so the balanced split gives the last stage 3 blocks and the head, the even one 6 and 6.
TEST(RunPlan, StageRulesSplitTheBlocks) {
  const RunPlan balanced = resolve_run_plan(config_of(kGpt2 + "strategy: {pp: 2}\n"));
  ASSERT_TRUE(balanced.feasible) << balanced.reason;
  EXPECT_EQ(balanced.stage_rule, "balanced");
  EXPECT_EQ(balanced.stages, (std::vector<std::int64_t>{9, 3}));
  const RunPlan even = resolve_run_plan(config_of(kGpt2 + "strategy: {pp: 2, stages: even}\n"));
  EXPECT_EQ(even.stages, (std::vector<std::int64_t>{6, 6}));
  EXPECT_EQ(even.stage_rule, "even");
  const RunPlan five = resolve_run_plan(config_of(kGpt2 + "strategy: {pp: 5, stages: even}\n"));
  EXPECT_EQ(five.stages, (std::vector<std::int64_t>{3, 3, 2, 2, 2}));
  const RunPlan listed = resolve_run_plan(config_of(kGpt2 + "strategy: {pp: 3, stages: [2, 5, 5]}\n"));
  EXPECT_EQ(listed.stage_rule, "list");
  EXPECT_EQ(listed.stages, (std::vector<std::int64_t>{2, 5, 5}));
  EXPECT_EQ(listed.stage(1), (StagePlan{2, 7, 2}));  // 1F1B: stage 1 of 3 holds min(3 − 1, m = 4)
}

TEST(RunPlan, ResnetUnitsAreBalancedByFlops) {
  const RunPlan p = resolve_run_plan(
      config_of("model: resnet-mini\ndata: {dataset: mnist}\nbatch: {global: 8}\nstrategy: {pp: 2, micro_batches: 4}\n"));
  ASSERT_TRUE(p.feasible) << p.reason;
  EXPECT_TRUE(p.resnet);
  EXPECT_EQ(p.units, 8);  // stem, 6 blocks, head
  EXPECT_EQ(std::accumulate(p.stages.begin(), p.stages.end(), std::int64_t{0}), 8);
  EXPECT_EQ(p.seq_len, 0);
  // 1F1B: the first of two stages holds two micro-batches, the last one
  EXPECT_EQ(p.stage(0).in_flight, 2);
  EXPECT_EQ(p.stage(1).in_flight, 1);
  const RunPlan gpipe = resolve_run_plan(config_of(
      "model: resnet-mini\ndata: {dataset: mnist}\nbatch: {global: 8}\n"
      "strategy: {pp: 2, micro_batches: 4, schedule: gpipe}\n"));
  EXPECT_EQ(gpipe.stage(1).in_flight, 4);
}

TEST(RunPlan, RefusalsNameTheirKindAndKeys) {
  const auto refusal = [](const std::string& yaml, std::int64_t world = 0) {
    const RunPlan p = resolve_run_plan(config_of(yaml), world);
    EXPECT_FALSE(p.feasible);
    return std::pair{p.refusal, p.reason};
  };
  const std::string nano = "model: gpt-nano\ndata: {dataset: sotu}\n";
  auto [kind, reason] = refusal(nano + "strategy: {tp: 3}\n");
  EXPECT_EQ(kind, Refusal::tp_heads);
  EXPECT_NE(reason.find("strategy.tp 3 must divide the 4 attention heads of model gpt-nano"), std::string::npos);
  std::tie(kind, reason) = refusal(nano + "strategy: {pp: 3}\n");
  EXPECT_EQ(kind, Refusal::pp_layers);
  std::tie(kind, reason) = refusal(nano + "batch: {global: 3}\nstrategy: {dp: 2}\n");
  EXPECT_EQ(kind, Refusal::batch_split);
  EXPECT_NE(reason.find("batch.global (3) must be a multiple of strategy.dp (2)"), std::string::npos);
  std::tie(kind, reason) = refusal(nano + "batch: {global: 8}\nstrategy: {micro_batches: 3}\n");
  EXPECT_EQ(kind, Refusal::batch_split);
  std::tie(kind, reason) = refusal(nano + "strategy: {dp: 2}\n", 4);
  EXPECT_EQ(kind, Refusal::devices);
  std::tie(kind, reason) = refusal("model: resnet-mini\ndata: {dataset: mnist}\nstrategy: {tp: 2}\n");
  EXPECT_EQ(kind, Refusal::tp_heads);
  // what no world size fixes is the config's mistake
  EXPECT_THROW(resolve_run_plan(config_of(nano + "strategy: {pp: 2, stages: [1, 2]}\n")), UserError);
  EXPECT_THROW(config_of(nano + "strategy: {pp: 2, stages: uneven}\n"), UserError);
  try {
    runnable_plan(config_of(nano + "strategy: {tp: 3}\n"));
    FAIL() << "tp 3 of 4 heads ran";
  } catch (const UserError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("case.yaml: strategy.tp 3", 0), 0u) << e.what();
  }
}

// Interleave v: pp·v chunks by the stage rule, rank r holding chunks r, r + pp, …, each with
// its own micro-batches in flight under the interleaved order; the refusals name their keys.
TEST(RunPlan, InterleavedChunksAndTheirRefusals) {
  const std::string eight = "model: {layers: 8, hidden: 64, heads: 4, seq_len: 32, vocab: 256}\ndata: sotu\n"
                            "batch: {global: 8}\n";
  const RunPlan p = resolve_run_plan(config_of(eight + "strategy: {pp: 2, interleave: 2, micro_batches: 4, "
                                                       "stages: even}\n"));
  ASSERT_TRUE(p.feasible) << p.reason;
  EXPECT_EQ(p.interleave, 2);
  EXPECT_EQ(p.stages, (std::vector<std::int64_t>{2, 2, 2, 2}));
  ASSERT_EQ(p.stage_plans.size(), 4u);
  EXPECT_EQ(p.chunk(0, 0).unit_begin, 0);  // rank 0: chunks 0 and 2
  EXPECT_EQ(p.chunk(0, 1).unit_begin, 4);
  EXPECT_EQ(p.chunk(1, 0).unit_begin, 2);  // rank 1: chunks 1 and 3
  EXPECT_EQ(p.chunk(1, 1).unit_end, 8);
  for (int r = 0; r < 2; ++r)
    for (std::int64_t k = 0; k < 2; ++k)
      EXPECT_EQ(p.chunk(r, k).in_flight, count_peak_in_flight(pipeline_stage_ops(p.schedule, 2, r, 4, 2), k));
  // rank 0 runs all 4 forwards of chunk 0 before its first backward there (chunk 1's come
  // first); chunk 1 holds at most 2 (F0c1 F1c1 B0c1 … in test_pipeline_schedule.cpp)
  EXPECT_EQ(p.chunk(0, 0).in_flight, 4);
  EXPECT_EQ(p.chunk(0, 1).in_flight, 2);

  const auto reason = [&](const std::string& strategy) {
    const RunPlan q = resolve_run_plan(config_of(eight + "strategy: " + strategy + "\n"));
    EXPECT_FALSE(q.feasible) << strategy;
    return std::pair{q.refusal, q.reason};
  };
  auto [kind, why] = reason("{pp: 2, interleave: 2, micro_batches: 1}");
  EXPECT_EQ(kind, Refusal::interleave);
  EXPECT_NE(why.find("strategy.interleave 2 needs the micro-batches per step (1: strategy.micro_batches or batch.micro) "
                     "to be a multiple of strategy.pp (2)"), std::string::npos) << why;
  std::tie(kind, why) = reason("{pp: 2, interleave: 2, micro_batches: 2, schedule: gpipe}");
  EXPECT_EQ(kind, Refusal::interleave);
  EXPECT_NE(why.find("it needs strategy.schedule 1f1b, not gpipe"), std::string::npos) << why;
  std::tie(kind, why) = reason("{interleave: 2}");
  EXPECT_EQ(kind, Refusal::interleave);
  EXPECT_NE(why.find("it needs strategy.pp > 1"), std::string::npos) << why;
  std::tie(kind, why) = reason("{pp: 4, interleave: 4, micro_batches: 4}");
  EXPECT_EQ(kind, Refusal::pp_layers);
  EXPECT_NE(why.find("strategy.pp 4 × strategy.interleave 4 = 16 model chunks, but model gpt-L8-C64-H4 has 8 blocks"),
            std::string::npos) << why;
  try {
    resolve_run_plan(config_of(eight + "strategy: {pp: 2, interleave: 2, micro_batches: 2, stages: [4, 4]}\n"));
    FAIL() << "a per-rank stage list passed";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("strategy.stages lists 2 stages but strategy.pp 2 × strategy.interleave 2 "
                                         "needs 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sb::plan
