// SPDX-License-Identifier: Apache-2.0
// The event simulation of one step against the closed forms it must reproduce: the pipeline
// bubble (p−1)/(m+p−1) with free messages, the ring all-reduce when the dp reduction is all
// there is, a fully exposed reduction when no overlap is possible, the activation sets held by
// each schedule, causality of messages, and a step time that grows with link latency. Leaves
// out the per-op costs' own formulas (test_step_prediction.cpp, test_closed_forms.cpp).
#include <gtest/gtest.h>

#include <limits>

#include "costmodel/closed_forms.hpp"
#include "costmodel/step_prediction.hpp"
#include "costmodel/step_simulation.hpp"
#include "costmodel_test_support.hpp"
#include "models/gpt/gpt_config.hpp"

namespace sb::costmodel {
namespace {

using testing::gpt_case;
using testing::site;
using testing::ring_formula;
using plan::PipelineSchedule;

StepSimulationInput balanced(PipelineSchedule schedule, int p, std::int64_t m, double tf, double tb,
                             double send = 0.0) {
  StepSimulationInput in;
  in.schedule = schedule;
  in.micro_batches = m;
  for (int s = 0; s < p; ++s) {
    StageOpCosts c;
    c.forward_compute_s = tf;
    c.backward_compute_s = tb;
    if (s + 1 < p) c.send_forward_s = send;
    if (s > 0) c.send_backward_s = send;
    in.stages.push_back(c);
  }
  return in;
}

TEST(StepSimulation, FreeMessagesGiveTheClosedFormBubble) {
  for (PipelineSchedule schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b}) {
    for (int p : {1, 2, 3, 4, 8}) {
      for (std::int64_t m : {1, 2, 4, 7, 16, 32}) {
        const StepSimulation sim = simulate_step(balanced(schedule, p, m, 1.0, 2.0));
        const double expected = pipeline_bubble_fraction(p, static_cast<int>(m));
        EXPECT_NEAR(sim.pipeline_end, static_cast<double>(m + p - 1) * 3.0, 1e-9);
        for (int s = 0; s < p; ++s)
          EXPECT_NEAR(sim.idle_s[s] / sim.pipeline_end, expected, 1e-12)
              << plan::to_string(schedule) << " p " << p << " m " << m << " stage " << s;
        // stage 0 ends the pipeline, so its own bubble is the same fraction
        EXPECT_NEAR(sim.stages[0].bubble_s / sim.pipeline_end, expected, 1e-12);
        EXPECT_DOUBLE_EQ(sim.step_time_s, sim.pipeline_end);
      }
    }
  }
}

// Interleaving simulated, not divided: v chunks per rank, each costing 1/v of a plain stage,
// with free messages and tb = tf give the interleaved closed form ((p−1)/v)/(m + (p−1)/v) on
// every rank (Narayanan et al. 2021 §2.2), shorter than the plain schedule's.
TEST(StepSimulation, InterleavedChunksShrinkTheBubbleByV) {
  for (int p : {2, 4}) {
    for (std::int64_t v : {2, 3}) {
      for (std::int64_t m : {p, 2 * p, 4 * p}) {
        StepSimulationInput in = balanced(PipelineSchedule::one_f_one_b, static_cast<int>(p * v), m,
                                          1.0 / static_cast<double>(v), 1.0 / static_cast<double>(v));
        in.interleave = v;
        const StepSimulation sim = simulate_step(in);
        ASSERT_EQ(sim.stages.size(), static_cast<std::size_t>(p));
        const double expected = pipeline_bubble_fraction(p, static_cast<int>(m), static_cast<int>(v));
        for (int s = 0; s < p; ++s)
          EXPECT_NEAR(sim.idle_s[s] / sim.pipeline_end, expected, 1e-12) << "p " << p << " v " << v << " m " << m;
        EXPECT_LT(sim.pipeline_end, simulate_step(balanced(PipelineSchedule::one_f_one_b, p, m, 1.0, 1.0)).pipeline_end);
      }
    }
  }
}

TEST(StepSimulation, OneFOneBHoldsAtMostPMicroBatchesGpipeHoldsAll) {
  for (int p : {2, 4, 8}) {
    for (std::int64_t m : {1, 3, 8, 24}) {
      const StepSimulation f = simulate_step(balanced(PipelineSchedule::one_f_one_b, p, m, 1.0, 2.0));
      const StepSimulation g = simulate_step(balanced(PipelineSchedule::gpipe, p, m, 1.0, 2.0));
      EXPECT_EQ(f.stages[0].peak_in_flight, std::min<std::int64_t>(p, m)) << "p " << p << " m " << m;
      EXPECT_EQ(g.stages[0].peak_in_flight, m);
      for (int s = 0; s < p; ++s)
        EXPECT_EQ(f.stages[s].peak_in_flight,
                  plan::pipeline_peak_in_flight(PipelineSchedule::one_f_one_b, p, s, m));
      // the same bubble: the schedules differ in memory, not in time
      EXPECT_NEAR(f.step_time_s, g.step_time_s, 1e-9);
    }
  }
}

TEST(StepSimulation, AReceiverStartsAfterTheSenderPlusTheMessage) {
  const double send = 0.25;
  const StepSimulation sim = simulate_step(balanced(PipelineSchedule::one_f_one_b, 4, 8, 1.0, 2.0, send));
  for (std::size_t s = 1; s < sim.stages.size(); ++s) {
    for (const TimelineOp& op : sim.stages[s].compute) {
      if (op.kind != TimelineOpKind::forward) continue;
      for (const TimelineOp& prev : sim.stages[s - 1].compute)
        if (prev.kind == TimelineOpKind::forward && prev.index == op.index)
          EXPECT_GE(op.start, prev.end + send - 1e-12) << "stage " << s << " micro " << op.index;
    }
  }
  // messages on the critical path lengthen the step beyond the free-message pipeline
  EXPECT_GT(sim.step_time_s, 11.0 * 3.0);
  for (const StageTimeline& tl : sim.stages)
    EXPECT_NEAR(tl.end, tl.compute_s + tl.tp_s + tl.p2p_s + tl.bubble_s + tl.dp_exposed_s + tl.optimizer_s, 1e-9);
}

// Sends beside the compute (Megatron-LM's overlap_p2p_comm): a stage goes on to its next op as
// soon as its own ends, its messages on a stream of their own, while the receiver still waits
// for each message; the interleaved pipeline, whose every chunk boundary is a message, gets
// shorter by about the messages it no longer waits for.
TEST(StepSimulation, OverlappedSendsLeaveTheSenderFreeAndTheReceiverWaiting) {
  const double send = 0.25;
  StepSimulationInput in = balanced(PipelineSchedule::one_f_one_b, 4, 8, 1.0, 2.0, send);
  in.interleave = 2;
  for (int s = 0; s < 4; ++s) {  // a second chunk a rank, its messages to and from the next rank
    StageOpCosts c = in.stages[static_cast<std::size_t>(s)];
    c.send_forward_s = c.send_backward_s = send;
    in.stages.push_back(c);
  }
  for (std::size_t i = 0; i < in.stages.size(); ++i) {
    if (i + 1 == in.stages.size()) in.stages[i].send_forward_s = 0;
    if (i == 0) in.stages[i].send_backward_s = 0;
  }
  const StepSimulation waiting = simulate_step(in);
  in.p2p_overlap = true;
  const StepSimulation overlapped = simulate_step(in);
  EXPECT_LT(overlapped.step_time_s, waiting.step_time_s);
  for (std::size_t s = 0; s < 4; ++s) {
    const StageTimeline& tl = overlapped.stages[s];
    EXPECT_EQ(tl.p2p_s, 0.0) << s;
    EXPECT_GT(waiting.stages[s].p2p_s, 0.0) << s;
    // the sends are on the comm side, and no compute op starts before the message it needs
    std::size_t sends = 0;
    for (const TimelineOp& op : tl.comm) sends += op.kind == TimelineOpKind::send_forward ? 1 : 0;
    EXPECT_EQ(sends, s < 3 ? 16u : 8u) << s;  // both chunks' outputs; the last rank's first chunk only
    for (const TimelineOp& op : tl.compute)
      EXPECT_NE(op.kind, TimelineOpKind::send_forward) << s;
    if (s == 0) continue;
    for (const TimelineOp& op : tl.compute) {
      if (op.kind != TimelineOpKind::forward) continue;
      for (const TimelineOp& sent : overlapped.stages[s - 1].comm)
        if (sent.kind == TimelineOpKind::send_forward && sent.index == op.index && sent.chunk == op.chunk)
          EXPECT_GE(op.start, sent.end - 1e-12) << "stage " << s << " chunk " << op.chunk << " micro " << op.index;
    }
  }
}

// One backward's buckets as the serial comm stream runs them, bucket by bucket: uneven buckets
// ready as the backward produces their bytes, the stream still busy with the last backward's.
TEST(StepSimulation, EachBackwardsBucketsEndAsTheSerialQueueDoes) {
  StepSimulationInput in = balanced(PipelineSchedule::one_f_one_b, 1, 3, 1.0, 2.0);
  StageOpCosts& c = in.stages[0];
  c.bucket_bytes = {3.0, 1.0, 4.0, 1.0, 5.0};
  c.bucket_s = {0.2, 0.9, 0.1, 1.3, 0.4};
  c.buckets_every_micro_batch = true;
  const StageTimeline tl = simulate_step(in).stages[0];
  ASSERT_EQ(tl.comm.size(), 3u);
  double free = 0;
  std::size_t k = 0;
  for (const TimelineOp& op : tl.compute) {
    if (op.kind != TimelineOpKind::backward) continue;
    double produced = 0, first = -1;
    for (std::size_t b = 0; b < c.bucket_s.size(); ++b) {
      produced += c.bucket_bytes[b];
      const double start = std::max(free, op.start + (op.end - op.start) * produced / 14.0);
      if (first < 0) first = start;
      free = start + c.bucket_s[b];
    }
    ASSERT_LT(k, tl.comm.size());
    EXPECT_NEAR(tl.comm[k].start, first, 1e-12) << k;
    EXPECT_NEAR(tl.comm[k].end, free, 1e-12) << k;
    ++k;
  }
  EXPECT_EQ(k, 3u);
  EXPECT_NEAR(tl.dp_exposed_s, free - tl.pipeline_end, 1e-12);
}

TEST(StepSimulation, BucketsOverlapTheLastBackwardOnly) {
  StepSimulationInput in = balanced(PipelineSchedule::one_f_one_b, 1, 4, 1.0, 2.0);
  in.stages[0].bucket_bytes = {1.0, 1.0, 1.0, 1.0};
  in.stages[0].bucket_s = {0.5, 0.5, 0.5, 0.5};
  in.stages[0].optimizer_s = 0.1;
  const StepSimulation sim = simulate_step(in);
  const StageTimeline& tl = sim.stages[0];
  // the last backward runs [10, 12]; bucket k is ready at 10 + 2(k+1)/4 and the stream is serial:
  // one comm op for the backward's buckets, from the first one's start to the last one's end
  ASSERT_EQ(tl.comm.size(), 1u);
  EXPECT_EQ(tl.comm[0].index, 3);
  EXPECT_DOUBLE_EQ(tl.comm[0].start, 10.5);
  EXPECT_DOUBLE_EQ(tl.comm[0].end, 12.5);
  EXPECT_DOUBLE_EQ(tl.dp_s, 2.0);
  EXPECT_DOUBLE_EQ(tl.dp_exposed_s, 0.5);
  EXPECT_DOUBLE_EQ(sim.step_time_s, 12.6);
  in.overlap = false;
  EXPECT_DOUBLE_EQ(simulate_step(in).stages[0].dp_exposed_s, 2.0);
}

// ZeRO-2 and 3 reduce every micro-batch's gradients in its backward: four micro-batches of
// one stage (forward 1, backward 2) each produce two buckets of 2 s, 4 s of reduction every
// 3 s, so the serial comm stream falls behind and the optimizer waits for the backlog, where
// the last backward's buckets alone leave 3 s exposed.
TEST(StepSimulation, ShardedGradientsReduceEveryMicroBatchsBackward) {
  StepSimulationInput in = balanced(PipelineSchedule::one_f_one_b, 1, 4, 1.0, 2.0);
  in.stages[0].bucket_bytes = {1.0, 1.0};
  in.stages[0].bucket_s = {2.0, 2.0};
  const StepSimulation last_only = simulate_step(in);
  ASSERT_EQ(last_only.stages[0].comm.size(), 1u);
  EXPECT_DOUBLE_EQ(last_only.stages[0].dp_exposed_s, 3.0);  // [11, 13], [13, 15] after B3 ends at 12
  in.stages[0].buckets_every_micro_batch = true;
  const StepSimulation every = simulate_step(in);
  const StageTimeline& tl = every.stages[0];
  ASSERT_EQ(tl.comm.size(), 4u);  // one op for each backward's buckets
  EXPECT_DOUBLE_EQ(tl.dp_s, 16.0);
  // backwards run [1, 3], [4, 6], [7, 9], [10, 12]; the first bucket is ready at 2, and from
  // there the stream runs without a gap: 2 + 8 × 2 = 18, each backward's buckets 4 s of it
  for (std::size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(tl.comm[k].index, static_cast<std::int64_t>(k));
    EXPECT_DOUBLE_EQ(tl.comm[k].start, 2.0 + 4.0 * static_cast<double>(k)) << k;
    EXPECT_DOUBLE_EQ(tl.comm[k].end, 6.0 + 4.0 * static_cast<double>(k)) << k;
  }
  EXPECT_DOUBLE_EQ(tl.dp_exposed_s, 6.0);
  EXPECT_DOUBLE_EQ(every.step_time_s, 18.0);
  // buckets that fit their backward stay hidden but for the last one's tail
  in.stages[0].bucket_s = {0.5, 0.5};
  EXPECT_DOUBLE_EQ(simulate_step(in).stages[0].dp_exposed_s, 0.5);
}

// ZeRO-3's gather waits: in every forward and backward of every micro-batch, or, gathered once
// and held (under pipeline parallelism), in each stage's first forward alone.
TEST(StepSimulation, GathersHeldThroughTheStepWaitOnceAStage) {
  StepSimulationInput in = balanced(PipelineSchedule::one_f_one_b, 2, 4, 1.0, 2.0);
  for (StageOpCosts& c : in.stages) {
    c.forward_gather_s = 0.25;
    c.backward_gather_s = 0.5;
  }
  const StepSimulation every = simulate_step(in);
  for (const StageTimeline& tl : every.stages) EXPECT_DOUBLE_EQ(tl.gather_s, 4 * (0.25 + 0.5));
  for (StageOpCosts& c : in.stages) c.gathers_once = true;
  const StepSimulation once = simulate_step(in);
  for (const StageTimeline& tl : once.stages) EXPECT_DOUBLE_EQ(tl.gather_s, 0.25);
  EXPECT_LT(once.step_time_s, every.step_time_s);
}

// Two stages on one node of two ranks: forwards cost 2 (stage 0) and 4 (stage 1) with both
// ranks computing, half that alone; backwards cost nothing.
StepSimulationInput shared_node_forwards() {
  StepSimulationInput in = balanced(PipelineSchedule::gpipe, 2, 2, 2.0, 0.0);
  in.stages[1].forward_compute_s = 4.0;
  for (StageOpCosts& c : in.stages) c.forward_compute_alone_s = c.forward_compute_s / 2;
  in.stage_node = {0, 0};
  in.node_ranks = 2;
  return in;
}

TEST(StepSimulation, OpsOnASharedNodeRunAtTheirLoadsCost) {
  // stage 0's F0 runs alone in [0, 1]; then its F1 and stage 1's F0 both compute from 1: F1 at
  // its busy length 2 ends at 3, when F0 is half done and its other half runs alone (1 more);
  // stage 1's F1 then runs alone in [4, 6]
  const StepSimulation sim = simulate_step(shared_node_forwards());
  const std::vector<TimelineOp>& s0 = sim.stages[0].compute;
  const std::vector<TimelineOp>& s1 = sim.stages[1].compute;
  ASSERT_EQ(s0[0].kind, TimelineOpKind::forward);
  EXPECT_DOUBLE_EQ(s0[0].end, 1.0);
  ASSERT_EQ(s0[2].kind, TimelineOpKind::forward);  // after F0's (free) send
  EXPECT_DOUBLE_EQ(s0[2].start, 1.0);
  EXPECT_DOUBLE_EQ(s0[2].end, 3.0);
  ASSERT_EQ(s1[0].kind, TimelineOpKind::forward);
  EXPECT_DOUBLE_EQ(s1[0].start, 1.0);
  EXPECT_DOUBLE_EQ(s1[0].end, 4.0);
  EXPECT_DOUBLE_EQ(s1[1].end, 6.0);
  EXPECT_DOUBLE_EQ(sim.pipeline_end, 6.0);
  EXPECT_DOUBLE_EQ(sim.stages[1].compute_s, 5.0);
}

TEST(StepSimulation, StagesOnTheirOwnNodesRunAtTheBusyCost) {
  StepSimulationInput in = shared_node_forwards();
  in.stage_node = {0, 1};  // each alone on its node: the busy cost is what one rank there takes
  in.node_ranks = 1;
  EXPECT_DOUBLE_EQ(simulate_step(in).pipeline_end, 2.0 + 4.0 + 4.0);
  in = shared_node_forwards();
  in.stage_node.clear();  // no sharing told: every op at its busy cost, as before alone costs
  EXPECT_DOUBLE_EQ(simulate_step(in).pipeline_end, 2.0 + 4.0 + 4.0);
}

// A site whose devices compute infinitely fast: what is left of a step is communication.
SiteProfile communication_only(SiteProfile s) {
  s.peak_flops = {{"fp32", std::numeric_limits<double>::infinity()},
                  {"bf16", std::numeric_limits<double>::infinity()},
                  {"fp16", std::numeric_limits<double>::infinity()}};
  s.memory_bandwidth = std::numeric_limits<double>::infinity();
  return s;
}

TEST(StepSimulation, DataParallelReductionAloneIsTheRingFormula) {
  SiteProfile s = communication_only(ring_formula(site("a100-80gb-dgx")));
  s.intra_node.latency = s.inter_node.latency = 0;  // buckets then add no latency of their own
  plan::TrainConfig c = gpt_case(4, 1024, 16, 16, 1, 1, 16, 1, "fp32");
  const Prediction p = predict_step(c, s);
  ASSERT_TRUE(p.feasible) << p.reason;
  const double psi = static_cast<double>(gpt::gpt_parameter_count(gpt::GptConfig{"t", 4, 1024, 16, 2048, 51200}));
  const double ring = ring_all_reduce_seconds(4.0 * psi, 16, {25e9, 0.0});  // fp32 gradients
  EXPECT_NEAR(p.step_time_s / ring, 1.0, 1e-9);
  EXPECT_NEAR(p.dp_comm_s / ring, 1.0, 1e-9);
}

TEST(StepSimulation, OneBucketAtTheEndExposesTheWholeReduction) {
  SiteProfile a100 = ring_formula(site("a100-80gb-dgx"));
  a100.memory_bandwidth = std::numeric_limits<double>::infinity();  // the exchange's copies free
  plan::TrainConfig c = gpt_case(24, 2048, 16, 16, 1, 1, 64, 1, "fp16");
  c.strategy.bucket_mb = 1e6;  // every gradient in one bucket, ready when the backward ends
  const Prediction p = predict_step(c, a100);
  ASSERT_TRUE(p.feasible) << p.reason;
  const double psi = static_cast<double>(gpt::gpt_parameter_count(gpt::GptConfig{"t", 24, 2048, 16, 2048, 51200}));
  EXPECT_NEAR(p.dp_comm_s, ring_all_reduce_seconds(2.0 * psi, 16, {25e9, 5e-6}), 1e-12);
  c.strategy.bucket_mb = 25;
  const Prediction overlapped = predict_step(c, a100);
  EXPECT_LT(overlapped.dp_comm_s, p.dp_comm_s);
  EXPECT_LT(overlapped.step_time_s, p.step_time_s);
}

TEST(StepSimulation, StepTimeGrowsWithLatency) {
  const SiteProfile base = ring_formula(site("h100-sxm-dgx"));
  plan::TrainConfig c = gpt_case(16, 2048, 16, 4, 4, 4, 64, 1, "bf16");
  double previous = 0;
  for (double scale : {0.0, 1.0, 10.0, 100.0, 1000.0}) {
    SiteProfile s = base;
    s.intra_node.latency *= scale;
    s.inter_node.latency *= scale;
    const Prediction p = predict_step(c, s, 64);
    ASSERT_TRUE(p.feasible) << p.reason;
    EXPECT_GT(p.step_time_s, previous) << "latency × " << scale;
    previous = p.step_time_s;
    // the critical rank's parts add up to the step
    EXPECT_NEAR(p.step_time_s, p.compute_s + p.comm_s + p.bubble_s + p.optimizer_s, 1e-9 * p.step_time_s);
    EXPECT_GT(p.tp_comm_s, 0.0);
    EXPECT_GT(p.p2p_s, 0.0);
  }
}

TEST(StepSimulation, RankStageFollowsTheGridOrder) {
  // tp fastest, then dp, then pp: dp 2 × tp 4 ranks per stage
  EXPECT_EQ(rank_stage(0, 2, 4), 0);
  EXPECT_EQ(rank_stage(7, 2, 4), 0);
  EXPECT_EQ(rank_stage(8, 2, 4), 1);
  EXPECT_EQ(rank_stage(31, 2, 4), 3);
}

}  // namespace
}  // namespace sb::costmodel
