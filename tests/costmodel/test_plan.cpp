// SPDX-License-Identifier: Apache-2.0
// plan_search: every candidate respects the grid rules, the feasible ones come fastest first and
// agree with predict_step, refusals are grouped with an example, and a model too big for the
// devices yields no feasible candidate but reasons. Leaves out the command line (tests/cli).
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "core/check.hpp"
#include "costmodel/plan.hpp"
#include "costmodel_test_support.hpp"
#include "plan/run_plan.hpp"

namespace sb::costmodel {
namespace {

using testing::site;

const PlanRejection* group(const PlanResult& r, const std::string& reason) {
  for (const PlanRejection& g : r.rejected)
    if (g.reason == reason) return &g;
  return nullptr;
}

TEST(Plan, RanksFeasibleCandidatesAndGroupsTheRest) {
  const SiteProfile a100 = site("a100-80gb-dgx");
  const PlanResult r = plan_search({"gpt-1.3b", 32, 64, 2048}, a100);
  ASSERT_FALSE(r.feasible.empty());
  std::int64_t rejected = 0;
  for (const PlanRejection& g : r.rejected) rejected += g.count;
  EXPECT_EQ(static_cast<std::int64_t>(r.feasible.size()) + rejected, r.candidates);
  for (std::size_t i = 0; i < r.feasible.size(); ++i) {
    const PlanCandidate& c = r.feasible[i];
    EXPECT_EQ(c.dp * c.tp * c.pp, 32);
    EXPECT_LE(c.tp, 8);
    EXPECT_EQ(16 % c.tp, 0);
    EXPECT_EQ(24 % c.pp, 0);
    EXPECT_EQ((64 / c.dp) % c.micro_batch, 0);
    EXPECT_LE(c.prediction.memory.total(), a100.memory_bytes);
    if (i > 0) EXPECT_LE(r.feasible[i - 1].prediction.step_time_s, c.prediction.step_time_s);
  }
  // the best candidate is what predict_step says of the same configuration
  const PlanCandidate& best = r.feasible.front();
  plan::TrainConfig c = testing::gpt_case(1, 1, 1, best.dp, best.tp, best.pp, 64, best.micro_batch, best.precision);
  c.model = plan::ModelSpec{};
  c.model.name = "gpt-1.3b";
  c.seq_len = 2048;
  c.strategy.zero = best.zero;
  c.strategy.recompute = best.recompute;
  c.strategy.schedule = best.schedule;
  c.strategy.sequence_parallel = c.strategy.tp_overlap = best.tp_overlap;
  c.precision.main_grads = "fp32";  // plan's default, as the trainer and today's Megatron-LM keep them
  EXPECT_DOUBLE_EQ(predict_step(c, a100, 32).step_time_s, best.prediction.step_time_s);
  // tp 16 and 32 exceed a node of 8; pp 16 leaves 24 layers in stages of one and two, pp 32 exceeds them
  const PlanRejection* node = group(r, "tp beyond one node");
  ASSERT_NE(node, nullptr);
  EXPECT_GT(node->count, 0);
  EXPECT_NE(node->example.prediction.reason.find("devices per node"), std::string::npos);
  const PlanRejection* pipeline = group(r, "pp beyond what the layers split into");
  ASSERT_NE(pipeline, nullptr);
  EXPECT_GT(pipeline->count, 0);
  const nlohmann::json j = plan_json({"gpt-1.3b", 32, 64, 2048}, a100, r, 5);
  EXPECT_EQ(j["feasible"].size(), 5u);
  EXPECT_EQ(j["feasible"][0]["step_time_s"].get<double>(), best.prediction.step_time_s);
  EXPECT_EQ(j["feasible"][0]["tp"].get<std::int64_t>(), best.tp);
  EXPECT_EQ(j["rejected"].size(), r.rejected.size());
}

// Under 1f1b every even split of a pipeline rank's layers into virtual stages is searched, with
// ZeRO 0 or 1, the sends beside the compute and 16-bit gradients, as NVIDIA's published runs take
// Megatron-LM's interleaved schedule;
// each is predict_step's answer for that case, and the fastest layout takes virtual stages.
TEST(Plan, SearchesVirtualStagesWithTheirSendsBesideTheCompute) {
  const SiteProfile h100 = site("h100-sxm-dgx");
  const PlanResult r = plan_search({"gpt-1.3b", 32, 64, 2048}, h100);
  std::size_t interleaved = 0;
  for (const PlanCandidate& c : r.feasible) {
    EXPECT_EQ(c.p2p_overlap, c.interleave > 1);
    if (c.interleave == 1) continue;
    ++interleaved;
    EXPECT_GT(c.pp, 1);
    EXPECT_EQ(c.schedule, "1f1b");
    EXPECT_LE(c.zero, 1);
    EXPECT_EQ((24 / c.pp) % c.interleave, 0);
    EXPECT_EQ((64 / (c.dp * c.micro_batch)) % c.pp, 0);
  }
  EXPECT_GT(interleaved, 10u);
  const auto first = std::find_if(r.feasible.begin(), r.feasible.end(),
                                  [](const PlanCandidate& c) { return c.interleave > 1; });
  ASSERT_NE(first, r.feasible.end());
  const plan::TrainConfig grid = plan_grid_config({"gpt-1.3b", 32, 64, 2048}, 2048, first->dp, first->tp, first->pp);
  const plan::TrainConfig c = plan_candidate_config(grid, *first);
  EXPECT_EQ(c.strategy.interleave, first->interleave);
  EXPECT_TRUE(c.strategy.p2p_overlap);
  EXPECT_EQ(c.strategy.stage_rule, "even");
  EXPECT_EQ(c.precision.main_grads, first->precision == "fp32" ? "fp32" : "storage");
  EXPECT_DOUBLE_EQ(predict_step(c, h100, 32).step_time_s, first->prediction.step_time_s);
  const nlohmann::json j = plan_candidate_json(*first);
  EXPECT_EQ(j["interleave"].get<std::int64_t>(), first->interleave);
  EXPECT_EQ(j["p2p_overlap"], true);
}

// Why plan predicts the memory of an interleaved layout whose 1f1b one does not fit: virtual
// stages keep more micro-batches in flight on the first rank, but their even split can put fewer
// layers there than the balanced 1f1b split (gpt-1.3b's 24 blocks and its head over 8 ranks: 4
// blocks on the first rank in 1f1b, 3 in 3 chunks interleaved), and the first rank can then need
// less.
TEST(Plan, InterleavedLayoutsCanNeedLessMemoryThanTheirOneFOneB) {
  const SiteProfile h100 = site("h100-sxm-dgx");
  const PlanRequest request{"gpt-1.3b", 64, 64, 2048};
  const plan::TrainConfig grid = plan_grid_config(request, 2048, 8, 1, 8);
  const PlanCandidate plain{.dp = 8, .tp = 1, .pp = 8, .micro_batch = 1, .zero = 1, .precision = "bf16",
                            .recompute = "none", .schedule = "1f1b"};
  PlanCandidate virtual_stages = plain;
  virtual_stages.interleave = 3;
  virtual_stages.p2p_overlap = true;
  const Prediction one_f_one_b = predict_step(plan_candidate_config(grid, plain), h100, 64);
  const Prediction interleaved = predict_step(plan_candidate_config(grid, virtual_stages), h100, 64);
  EXPECT_EQ(plan::resolve_run_plan(plan_candidate_config(grid, plain)).stages.front(), 4);
  const std::vector<std::int64_t> chunks = plan::resolve_run_plan(plan_candidate_config(grid, virtual_stages)).stages;
  ASSERT_EQ(chunks.size(), 24u);
  EXPECT_EQ(chunks[0] + chunks[8] + chunks[16], 3);  // model chunk i is local chunk i / 8 of rank i mod 8
  EXPECT_LT(interleaved.memory.total(), one_f_one_b.memory.total());
}

// A pp that does not divide the layers is searched up to half of them, its stages the plan's
// balanced split (Llama 3 405B's 126 layers ran on 16 stages): gpt-13b's 40 blocks on 16 ranks
// of 2 or 3 each; on 32 ranks stages of one block would wait on stages of two, and the search
// says so.
TEST(Plan, SearchesPipelinesThatDoNotDivideTheLayers) {
  const SiteProfile a100 = site("a100-80gb-dgx");
  const PlanRequest request{"gpt-13b", 32, 64, 2048};
  const PlanResult r = plan_search(request, a100);
  const auto sixteen = std::find_if(r.feasible.begin(), r.feasible.end(), [](const PlanCandidate& c) {
    return c.pp == 16;
  });
  ASSERT_NE(sixteen, r.feasible.end());
  const plan::TrainConfig grid = plan_grid_config(request, 2048, sixteen->dp, sixteen->tp, 16);
  const plan::TrainConfig config = plan_candidate_config(grid, *sixteen);
  const std::vector<std::int64_t> stages = plan::resolve_run_plan(config).stages;
  ASSERT_EQ(stages.size(), 16u);
  EXPECT_EQ(std::accumulate(stages.begin(), stages.end(), std::int64_t{0}), 40);
  EXPECT_EQ(*std::max_element(stages.begin(), stages.end()), 3);
  EXPECT_GE(*std::min_element(stages.begin(), stages.end()), 2);
  EXPECT_DOUBLE_EQ(predict_step(config, a100, 32).step_time_s, sixteen->prediction.step_time_s);
  for (const PlanCandidate& c : r.feasible) {
    EXPECT_NE(c.pp, 32);
    if (c.pp == 16) EXPECT_EQ(c.interleave, 1);  // virtual stages only where pp divides the layers
  }
  const PlanRejection* pipeline = group(r, "pp beyond what the layers split into");
  ASSERT_NE(pipeline, nullptr);
  EXPECT_EQ(pipeline->example.pp, 32);
  EXPECT_NE(pipeline->example.prediction.reason.find("pp 32 does not divide the 40 layers of gpt-13b and leaves "
                                                     "stages of one block waiting on stages of two"),
            std::string::npos) << pipeline->example.prediction.reason;
}

TEST(Plan, ModelTooBigForTheDevicesHasOnlyReasons) {
  const PlanResult r = plan_search({"gpt-1t", 8, 8, 2048}, site("h100-sxm-dgx"));
  EXPECT_TRUE(r.feasible.empty());
  EXPECT_GT(r.candidates, 100);
  const PlanRejection* memory = group(r, "too little memory");
  ASSERT_NE(memory, nullptr);
  EXPECT_NE(memory->example.prediction.reason.find("needs"), std::string::npos) << memory->example.prediction.reason;
  // the example is the candidate that comes closest to fitting: one that shards the most
  const SiteProfile h100 = site("h100-sxm-dgx");
  EXPECT_GT(memory->example.prediction.memory.total(), h100.memory_bytes);
  EXPECT_EQ(memory->example.recompute, "full");
}

TEST(Plan, UnknownModelIsAUserError) {
  EXPECT_THROW(plan_search({"gpt-9x", 8, 8, 0}, site("h100-sxm-dgx")), sb::UserError);
}

}  // namespace
}  // namespace sb::costmodel
