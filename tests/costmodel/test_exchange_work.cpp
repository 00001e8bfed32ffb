// SPDX-License-Identifier: Apache-2.0
// exchange_work: the bytes of the trainer's passes over gradients and parameters on each path
// (bucketed all-reduce, ZeRO-1/2/3, 16-bit main gradients), and the step prediction charging
// them at the site's memory speed in the phase they run in. Leaves out the collectives' own
// times (test_step_prediction.cpp, test_step_simulation.cpp).
#include <gtest/gtest.h>

#include <limits>

#include "costmodel/exchange_work.hpp"
#include "costmodel/step_prediction.hpp"
#include "costmodel/step_simulation.hpp"
#include "costmodel_test_support.hpp"

namespace sb::costmodel {
namespace {

using testing::gpt_case;
using testing::site;

plan::TrainConfig with(const std::string& dtype, const std::string& main_grads, int zero) {
  plan::TrainConfig c = gpt_case(2, 256, 4, 2, 1, 1, 8, 1, dtype);
  c.precision.main_grads = main_grads;
  c.strategy.zero = zero;
  return c;
}

constexpr double P = 1000.0;  // parameters; shards of 500 over dp 2, 334 over dp 3

TEST(ExchangeWork, OneRankInFp32DoesNothing) {
  const ExchangeWork w = exchange_work(with("fp32", "fp32", 0), P, 1, 4);
  EXPECT_EQ(w.backward_bytes_per_micro_batch + w.backward_bytes_per_step + w.finish_bytes + w.after_optimizer_bytes +
                w.reduce_scatter_bytes + w.after_optimizer_gather_bytes,
            0.0);
}

TEST(ExchangeWork, BucketedAllReducePacksThenCopiesBackAndScales) {
  const ExchangeWork w = exchange_work(with("fp32", "fp32", 0), P, 2, 4);
  EXPECT_EQ(w.backward_bytes_per_micro_batch, 0.0);  // only the last micro-batch reports
  EXPECT_EQ(w.backward_bytes_per_step, 8 * P);       // packed: read and write fp32
  EXPECT_EQ(w.finish_bytes, 16 * P);                 // copied back, then scaled in place
  EXPECT_EQ(w.reduce_scatter_bytes, 0.0);
  EXPECT_EQ(w.after_optimizer_gather_bytes, 0.0);
}

TEST(ExchangeWork, ZeroOneReducesAfterBackwardAndGathersAfterTheOptimizer) {
  const ExchangeWork fp32 = exchange_work(with("fp32", "fp32", 1), P, 3, 1);
  const double shard = 334;
  EXPECT_EQ(fp32.backward_bytes_per_micro_batch + fp32.backward_bytes_per_step, 0.0);
  EXPECT_EQ(fp32.reduce_scatter_bytes, 4 * shard * 3);  // padded to dp whole shards
  EXPECT_EQ(fp32.finish_bytes, 8 * P + 8 * shard);
  EXPECT_EQ(fp32.after_optimizer_gather_bytes, 4 * shard * 3);
  EXPECT_EQ(fp32.after_optimizer_bytes, 8 * shard + 8 * P);
  // mixed precision: the master shard rounded into the 16-bit weights, gathered in place
  const ExchangeWork bf16 = exchange_work(with("bf16", "fp32", 1), P, 3, 1);
  EXPECT_EQ(bf16.after_optimizer_gather_bytes, 2 * P);
  EXPECT_EQ(bf16.after_optimizer_bytes, 6 * shard);
  // 16-bit main gradients: accumulated in 16 bits, reduce-scattered in 16 bits
  const ExchangeWork storage = exchange_work(with("bf16", "storage", 1), P, 3, 2);
  EXPECT_EQ(storage.backward_bytes_per_micro_batch, 8 * P);
  EXPECT_EQ(storage.reduce_scatter_bytes, 2 * shard * 3);
  EXPECT_EQ(storage.after_optimizer_gather_bytes, 2 * P);
}

// Megatron-LM's gradient_accumulation_fusion: the weight-gradient GEMMs accumulate into the
// 16-bit main gradients, so no micro-batch pays the trainer's pass of its own; the step's zeroing,
// the reduction and the gather are unchanged.
TEST(ExchangeWork, GradAccumulationFusionDropsTheSixteenBitPassPerMicroBatch) {
  plan::TrainConfig c = with("fp16", "storage", 0);
  const ExchangeWork passes = exchange_work(c, P, 1, 4);
  EXPECT_EQ(passes.backward_bytes_per_micro_batch, 8 * P);  // read fp32 and 16 bits, write 16 bits
  c.strategy.grad_accumulation_fusion = true;
  const ExchangeWork fused = exchange_work(c, P, 1, 4);
  EXPECT_EQ(fused.backward_bytes_per_micro_batch, 0.0);
  EXPECT_EQ(fused.backward_bytes_per_step, passes.backward_bytes_per_step);  // zeroed once a step
  EXPECT_EQ(fused.finish_bytes, passes.finish_bytes);                        // the loss scale's inverse
  plan::TrainConfig one = with("bf16", "storage", 1);
  one.strategy.grad_accumulation_fusion = true;
  const ExchangeWork zero_one = exchange_work(one, P, 3, 2);
  EXPECT_EQ(zero_one.backward_bytes_per_micro_batch, 0.0);
  EXPECT_EQ(zero_one.reduce_scatter_bytes, 2 * 334 * 3);
  // fp32 main gradients have no such pass either way
  plan::TrainConfig fp32 = with("bf16", "fp32", 0);
  fp32.strategy.grad_accumulation_fusion = true;
  EXPECT_EQ(exchange_work(fp32, P, 2, 4).backward_bytes_per_micro_batch, 0.0);
}

TEST(ExchangeWork, ZeroTwoAndThreeStageEveryMicroBatchAndOnlyTwoGathersAtTheEnd) {
  const double shard = 500;
  const ExchangeWork two = exchange_work(with("fp32", "fp32", 2), P, 2, 4);
  EXPECT_EQ(two.backward_bytes_per_micro_batch, 8 * P);                 // staged copies
  EXPECT_EQ(two.backward_bytes_per_step, 4 * shard + 3 * 12 * shard);  // zeroed; 3 micro-batches' pieces added
  EXPECT_EQ(two.finish_bytes, 12 * shard + 8 * shard);                  // the last pieces, the scale
  EXPECT_EQ(two.after_optimizer_gather_bytes, 4 * P);
  const ExchangeWork three = exchange_work(with("fp32", "fp32", 3), P, 2, 4);
  EXPECT_EQ(three.backward_bytes_per_micro_batch, two.backward_bytes_per_micro_batch);
  EXPECT_EQ(three.finish_bytes, two.finish_bytes);
  EXPECT_EQ(three.after_optimizer_bytes + three.after_optimizer_gather_bytes, 0.0);  // its units gather
  // 16-bit gradient shards: staged by rounding (read fp32, write 16 bits)
  const ExchangeWork sixteen = exchange_work(with("bf16", "storage", 2), P, 2, 1);
  EXPECT_EQ(sixteen.backward_bytes_per_micro_batch, 6 * P);
  EXPECT_EQ(sixteen.finish_bytes, 6 * shard + 4 * shard);
}

TEST(ExchangeWork, SixteenBitMainGradientsAccumulateAlsoOnOneRank) {
  const ExchangeWork bf16 = exchange_work(with("bf16", "storage", 0), P, 1, 4);
  EXPECT_EQ(bf16.backward_bytes_per_micro_batch, 8 * P);
  EXPECT_EQ(bf16.backward_bytes_per_step, 2 * P);
  EXPECT_EQ(bf16.finish_bytes, 0.0);  // bf16 has no loss scale to take out
  EXPECT_EQ(exchange_work(with("fp16", "storage", 0), P, 1, 4).finish_bytes, 4 * P);
  EXPECT_EQ(exchange_work(with("bf16", "storage", 0), P, 2, 4).finish_bytes, 4 * P);  // the mean back
}

// The prediction charges the passes at the site's memory speed: the same case on a site whose
// memory is twice as fast loses exactly half of them, and at infinite speed all of them. One
// micro-batch a step, so that ZeRO-2's reductions (one per micro-batch's backward) do not
// overlap the next micro-batch, whose start the passes move (the byte counts per micro-batch
// are the tests above).
TEST(ExchangeWork, PredictionChargesThePassesAtTheMemorySpeed) {
  SiteProfile s = testing::ring_formula(site("a100-80gb-dgx"));
  s.peak_flops = {{"fp32", std::numeric_limits<double>::infinity()}};
  plan::TrainConfig c = gpt_case(4, 1024, 16, 2, 1, 1, 2, 1, "fp32");
  c.strategy.overlap = false;
  for (int zero : {0, 1, 2}) {
    c.strategy.zero = zero;
    const auto step = [&](double bandwidth) {
      SiteProfile t = s;
      t.memory_bandwidth = bandwidth;
      const Prediction p = predict_step(c, t);
      EXPECT_TRUE(p.feasible) << p.reason;
      return p.dp_comm_s;
    };
    const double inf = std::numeric_limits<double>::infinity();
    const double bandwidth = 1e11;
    const double passes = step(bandwidth) - step(inf);
    EXPECT_GT(passes, 0.0) << "zero " << zero;
    EXPECT_NEAR(step(2 * bandwidth) - step(inf), passes / 2, 1e-12 + 1e-9 * passes) << "zero " << zero;
  }
}

// ZeRO-1's one reduction waits for the last backward: overlap hides nothing of it.
TEST(ExchangeWork, ZeroOneReductionIsNotOverlapped) {
  StepSimulationInput in;
  in.micro_batches = 1;
  StageOpCosts op;
  op.forward_compute_s = 1.0;
  op.backward_compute_s = 2.0;
  op.bucket_bytes = {1.0, 1.0};
  op.bucket_s = {0.5, 0.5};
  in.stages = {op};
  EXPECT_NEAR(simulate_step(in).step_time_s, 3.5, 1e-12);  // the first bucket hides in backward
  in.stages[0].buckets_after_backward = true;
  in.stages[0].finish_exchange_s = 0.25;
  in.stages[0].optimizer_s = 0.125;
  in.stages[0].after_optimizer_s = 0.0625;
  const StepSimulation sim = simulate_step(in);
  EXPECT_NEAR(sim.step_time_s, 3.0 + 1.0 + 0.25 + 0.125 + 0.0625, 1e-12);
  EXPECT_NEAR(sim.stages[0].dp_exposed_s, 1.25, 1e-12);
  EXPECT_NEAR(sim.stages[0].after_optimizer_s, 0.0625, 1e-12);
}

}  // namespace
}  // namespace sb::costmodel
