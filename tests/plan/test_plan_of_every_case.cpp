// SPDX-License-Identifier: Apache-2.0
// The trainer and the cost model describe a run with one object from one function: for every
// case of every shipped suite and for a grid of `plan` candidates from gpt-nano to gpt-1t, the
// plan the prediction was made from equals plan::resolve_run_plan of the same case, which is
// what the trainer runs (tests/cli: the stages a training run records equal predict's).
// Leaves out what the plan is (test_run_plan.cpp).
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <numeric>

#include "costmodel/plan.hpp"
#include "costmodel/run_prediction.hpp"
#include "costmodel/site_profile.hpp"
#include "costmodel/step_prediction.hpp"
#include "plan/run_plan.hpp"
#include "plan/suite.hpp"

namespace sb::plan {
namespace {

costmodel::SiteProfile site_named(const std::string& name) {
  return costmodel::load_site_profile(costmodel::site_profile_path(name));
}

// Stages that cover the model's units once, in order, each holding at least one.
void expect_consistent(const RunPlan& p, const std::string& label) {
  ASSERT_EQ(p.stages.size(), static_cast<std::size_t>(p.pp * p.interleave)) << label;
  ASSERT_EQ(p.stage_plans.size(), p.stages.size()) << label;
  std::int64_t next = 0;
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    EXPECT_GE(p.stages[s], 1) << label;
    EXPECT_EQ(p.stage_plans[s].unit_begin, next) << label;
    EXPECT_EQ(p.stage_plans[s].unit_end - p.stage_plans[s].unit_begin, p.stages[s]) << label;
    EXPECT_GE(p.stage_plans[s].in_flight, 1) << label;
    next = p.stage_plans[s].unit_end;
  }
  EXPECT_EQ(next, p.units) << label;
  EXPECT_EQ(p.micro_batch * p.micro_batches, p.local_batch) << label;
  EXPECT_EQ(p.local_batch * p.dp, p.global_batch) << label;
}

TEST(PlanOfEveryCase, EverySuiteCaseIsPredictedAsTheTrainerRunsIt) {
  int cases = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(SB_SOURCE_DIR) / "suites")) {
    if (entry.path().extension() != ".yaml") continue;
    const Suite suite = load_suite(entry.path(), {});
    for (const SuiteCase& sc : suite.cases) {
      const std::string label = entry.path().filename().string() + " " + sc.id;
      const TrainConfig c = parse_train_config(sc.config, label);
      const RunPlan resolved = resolve_run_plan(c, sc.world_size);
      ASSERT_TRUE(resolved.feasible) << label << ": " << resolved.reason;
      expect_consistent(resolved, label);
      EXPECT_EQ(sc.plan, resolved) << label;  // what `run` and `submit` launch
      const std::string site = costmodel::site_of(c).empty() ? "h200-sxm-hgx" : costmodel::site_of(c);
      const costmodel::Prediction p = costmodel::predict_step(c, site_named(site), static_cast<int>(sc.world_size));
      EXPECT_EQ(p.plan, resolved) << label;
      ++cases;
    }
  }
  EXPECT_GE(cases, 30);
}

// Every layout `plan` visits for these models and device counts: dp, tp and pp up to 64,
// micro-batches 1 to 64, in bf16 and fp32, on a GPU site and on this machine's profile.
TEST(PlanOfEveryCase, EveryPlanCandidateIsPredictedFromItsRunPlan) {
  const std::vector<std::string> models = {"gpt-nano", "gpt-tiny",  "gpt-small", "gpt2-124m", "gpt-1.3b",
                                           "gpt-13b",  "gpt-175b", "gpt-530b",  "gpt-1t"};
  std::int64_t checked = 0, pipelined = 0;
  for (const std::string& site_name : {"h100-sxm-dgx", "this-machine"}) {
    const costmodel::SiteProfile site = site_named(site_name);
    for (const std::string& model : models) {
      for (const int devices : {1, 2, 4, 8, 16, 32, 64}) {
        const costmodel::PlanRequest request{model, devices, 64, 0};
        const std::int64_t seq = gpt::gpt_config_by_name(model).max_seq_len;
        for (std::int64_t tp = 1; tp <= devices; tp *= 2)
          for (std::int64_t pp = 1; tp * pp <= devices; pp *= 2) {
            const TrainConfig grid = costmodel::plan_grid_config(request, seq, devices / (tp * pp), tp, pp);
            for (std::int64_t micro = 1; micro <= 64; micro *= 2)
              for (const std::string& precision : {"bf16", "fp32"}) {
                costmodel::PlanCandidate candidate{.dp = grid.strategy.dp, .tp = tp, .pp = pp, .micro_batch = micro,
                                                   .zero = 0, .precision = precision, .recompute = "none",
                                                   .schedule = "1f1b"};
                const TrainConfig c = costmodel::plan_candidate_config(grid, candidate);
                const RunPlan resolved = resolve_run_plan(c, devices);
                const costmodel::Prediction p = costmodel::predict_step(c, site, devices);
                const std::string label = fmt::format("{} on {}: dp {} tp {} pp {} micro {} {}", model, site_name,
                                                      grid.strategy.dp, tp, pp, micro, precision);
                ASSERT_EQ(p.plan, resolved) << label;
                if (resolved.feasible) expect_consistent(resolved, label);
                if (resolved.feasible && pp > 1) ++pipelined;
                ++checked;
              }
          }
      }
    }
  }
  EXPECT_GT(checked, 5000);
  EXPECT_GT(pipelined, 1000);
}

// An interleaved case the plan refuses, predict refuses with the same sentence (it predicts
// from the same plan), and one it accepts predicts from that plan.
TEST(PlanOfEveryCase, InterleaveRefusalsArePredictsToo) {
  const costmodel::SiteProfile site = site_named("this-machine");
  const std::string eight = "model: {layers: 8, hidden: 64, heads: 4, seq_len: 32, vocab: 256}\ndata: sotu\n"
                            "batch: {global: 8}\nstrategy: ";
  for (const std::string strategy : {"{pp: 2, interleave: 2, micro_batches: 1}",
                                     "{pp: 2, interleave: 2, micro_batches: 2, schedule: gpipe}",
                                     "{pp: 4, interleave: 4, micro_batches: 4}", "{interleave: 2}"}) {
    const TrainConfig c = parse_train_config(parse_yaml_text(eight + strategy + "\n", "case.yaml"), "case.yaml");
    const RunPlan p = resolve_run_plan(c);
    ASSERT_FALSE(p.feasible) << strategy;
    const costmodel::Prediction prediction = costmodel::predict_step(c, site);
    EXPECT_FALSE(prediction.feasible) << strategy;
    EXPECT_EQ(prediction.reason, p.reason) << strategy;
  }
  const TrainConfig ok = parse_train_config(
      parse_yaml_text(eight + "{pp: 2, interleave: 2, micro_batches: 4}\n", "case.yaml"), "case.yaml");
  const costmodel::Prediction prediction = costmodel::predict_step(ok, site);
  ASSERT_TRUE(prediction.feasible) << prediction.reason;
  EXPECT_EQ(prediction.plan, resolve_run_plan(ok));
  EXPECT_EQ(prediction.plan.stages.size(), 4u);
  EXPECT_EQ(prediction.rank_memory.size(), 2u);
}

}  // namespace
}  // namespace sb::plan
