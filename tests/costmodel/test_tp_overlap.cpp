// SPDX-License-Identifier: Apache-2.0
// strategy.tp_overlap: the exposed part of each sequence-parallel pair on hand-computed windows,
// and a prediction whose tp collectives hide under the linear layers' GEMMs (a layout that
// needs sequence parallelism refused without it). Leaves out the collectives' own times
// (test_nccl_collectives.cpp).
#include <gtest/gtest.h>

#include "costmodel/step_prediction.hpp"
#include "costmodel/tp_overlap.hpp"
#include "costmodel_test_support.hpp"

namespace sb::costmodel {
namespace {

TEST(TpOverlap, EachPairShowsWhatItsGemmsDoNotCover) {
  // attention's GEMMs 1 ms forward, 2 ms backward; the MLP's 3 and 6 ms, its input GEMM 0.5 ms
  // alone; a pair 1.5 ms, its all-gather 0.8 ms
  const TpOverlapWindows w{1e-3, 3e-3, 2e-3, 6e-3, 0.5e-3};
  const TpSeconds plain = overlapped_tp_seconds(w, 1.5e-3, 0.8e-3, 10, false, RecomputedPairs::none);
  EXPECT_DOUBLE_EQ(plain.forward, 10 * 0.5e-3);  // the attention's pair shows 0.5 ms, the MLP's none
  EXPECT_DOUBLE_EQ(plain.backward, 0.0);
  // the embedding's all-reduce has no GEMM under it; a full recomputation reruns the forward's pairs
  const TpSeconds first = overlapped_tp_seconds(w, 1.5e-3, 0.8e-3, 10, true, RecomputedPairs::whole);
  EXPECT_DOUBLE_EQ(first.forward, 10 * 0.5e-3 + 1.5e-3);
  EXPECT_DOUBLE_EQ(first.backward, 10 * 0.5e-3);
  // an early-stopped recomputation reruns the attention's pair (0.5 ms shows) and the MLP's
  // all-gather alone under its input GEMM (0.8 - 0.5 = 0.3 ms shows), not the reduce-scatter
  const TpSeconds early = overlapped_tp_seconds(w, 1.5e-3, 0.8e-3, 10, false, RecomputedPairs::early_stopped);
  EXPECT_DOUBLE_EQ(early.forward, plain.forward);
  EXPECT_NEAR(early.backward, 10 * (0.5e-3 + 0.3e-3), 1e-15);
  // no GEMM to hide under: every pair shows whole, as without overlap
  const TpSeconds bare = overlapped_tp_seconds(TpOverlapWindows{}, 1.5e-3, 0.8e-3, 4, false, RecomputedPairs::none);
  EXPECT_DOUBLE_EQ(bare.forward, 4 * 2 * 1.5e-3);
  EXPECT_DOUBLE_EQ(bare.backward, 4 * 2 * 1.5e-3);
  const TpSeconds bare_early =
      overlapped_tp_seconds(TpOverlapWindows{}, 1.5e-3, 0.8e-3, 4, false, RecomputedPairs::early_stopped);
  EXPECT_NEAR(bare_early.backward, 4 * (2 * 1.5e-3 + 1.5e-3 + 0.8e-3), 1e-15);
}

// GPT-3 175B's layout on DGX H100 (tp 4 with sequence parallelism): its pairs hide under its
// large GEMMs, so the exposed tp time falls to the embedding's and the step shortens by it;
// without sequence parallelism the layout is refused with the key named.
TEST(TpOverlap, HidesTheSequenceParallelPairsOfALargeModel) {
  const SiteProfile h100 = testing::site("h100-sxm-dgx");
  plan::TrainConfig c = testing::gpt_case(1, 1, 1, 4, 4, 8, 64, 1);
  c.model = plan::ModelSpec{};
  c.model.name = "gpt-175b";
  c.model.attention = "flash";
  c.strategy.sequence_parallel = true;
  c.strategy.zero = 1;
  c.precision.dtype = "bf16";
  const Prediction exposed = predict_step(c, h100);
  c.strategy.tp_overlap = true;
  const Prediction hidden = predict_step(c, h100);
  ASSERT_TRUE(exposed.feasible && hidden.feasible) << exposed.reason << hidden.reason;
  EXPECT_GT(exposed.tp_comm_s, 0.0);
  EXPECT_LT(hidden.tp_comm_s, 0.1 * exposed.tp_comm_s);
  EXPECT_LT(hidden.step_time_s, exposed.step_time_s);
  EXPECT_NEAR(hidden.compute_s, exposed.compute_s, 1e-12 * exposed.compute_s);  // the GEMMs are the same
  c.strategy.sequence_parallel = false;
  const Prediction refused = predict_step(c, h100);
  EXPECT_FALSE(refused.feasible);
  EXPECT_NE(refused.reason.find("strategy.tp_overlap"), std::string::npos) << refused.reason;
  EXPECT_NE(refused.reason.find("strategy.sequence_parallel true"), std::string::npos) << refused.reason;
}

}  // namespace
}  // namespace sb::costmodel
