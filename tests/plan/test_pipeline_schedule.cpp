// SPDX-License-Identifier: Apache-2.0
// GPipe and 1F1B operation lists: exact lists for small cases, every forward and backward once
// in a valid order, the closed-form peak in flight, and a unit-time simulation that completes
// with exactly the ideal bubble (p − 1)/(m + p − 1).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "plan/pipeline_schedule.hpp"

namespace sb::plan {
namespace {

using enum PipelineSchedule;

// "F0 F1 B0 ..." for readable failures.
std::string describe(const std::vector<PipelineOp>& ops) {
  std::string s;
  for (const PipelineOp& op : ops) {
    if (!s.empty()) s += ' ';
    s += (op.kind == PipelineOpKind::forward ? "F" : "B") + std::to_string(op.micro);
    if (op.chunk > 0) s += "c" + std::to_string(op.chunk);
  }
  return s;
}

TEST(PipelineSchedule, OneFOneBListsForTwoAndFourStages) {
  EXPECT_EQ(describe(pipeline_stage_ops(one_f_one_b, 2, 0, 4)), "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(describe(pipeline_stage_ops(one_f_one_b, 2, 1, 4)), "F0 B0 F1 B1 F2 B2 F3 B3");
  EXPECT_EQ(describe(pipeline_stage_ops(one_f_one_b, 4, 0, 4)), "F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(describe(pipeline_stage_ops(one_f_one_b, 4, 0, 6)), "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5");
  EXPECT_EQ(describe(pipeline_stage_ops(one_f_one_b, 4, 1, 6)), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 B4 B5");
  EXPECT_EQ(describe(pipeline_stage_ops(one_f_one_b, 4, 3, 3)), "F0 B0 F1 B1 F2 B2");
  // fewer micro-batches than the warm-up wants: all forwards, then all backwards
  EXPECT_EQ(describe(pipeline_stage_ops(one_f_one_b, 4, 0, 2)), "F0 F1 B0 B1");
  EXPECT_EQ(describe(pipeline_stage_ops(one_f_one_b, 4, 1, 1)), "F0 B0");
}

TEST(PipelineSchedule, GpipeListsRunEveryForwardThenEveryBackwardInOrder) {
  for (int stage = 0; stage < 3; ++stage)
    EXPECT_EQ(describe(pipeline_stage_ops(gpipe, 3, stage, 4)), "F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(describe(pipeline_stage_ops(gpipe, 1, 0, 1)), "F0 B0");
}

TEST(PipelineSchedule, NamesRoundTripAndUnknownNamesAreUserErrors) {
  for (PipelineSchedule s : {gpipe, one_f_one_b}) EXPECT_EQ(pipeline_schedule_from_string(to_string(s)), s);
  try {
    pipeline_schedule_from_string("interleaved");
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "unknown pipeline schedule 'interleaved' (known: gpipe, 1f1b)");
  }
}

TEST(PipelineSchedule, IdealBubble) {
  EXPECT_DOUBLE_EQ(pipeline_ideal_bubble_fraction(1, 4), 0.0);
  EXPECT_DOUBLE_EQ(pipeline_ideal_bubble_fraction(2, 1), 0.5);
  EXPECT_DOUBLE_EQ(pipeline_ideal_bubble_fraction(2, 8), 1.0 / 9.0);
  EXPECT_DOUBLE_EQ(pipeline_ideal_bubble_fraction(4, 4), 3.0 / 7.0);
}

// For p = 1..6 and m = 1..9, both schedules: every op once, forwards and backwards each in
// micro-batch order, each backward after its forward, the closed-form peak equal to the counted
// one (1F1B's never above GPipe's), and a simulation that completes in (m + p − 1)(tf + tb) with
// every stage idle exactly (p − 1)/(m + p − 1) of it, for tb = tf and tb = 2 tf.
TEST(PipelineSchedule, EveryCaseIsCompleteOrderedAndSimulatesToTheIdealBubble) {
  for (PipelineSchedule schedule : {gpipe, one_f_one_b}) {
    for (int p = 1; p <= 6; ++p) {
      for (std::int64_t m = 1; m <= 9; ++m) {
        const std::string what = std::string(to_string(schedule)) + " p=" + std::to_string(p) + " m=" + std::to_string(m);
        for (int s = 0; s < p; ++s) {
          const auto ops = pipeline_stage_ops(schedule, p, s, m);
          ASSERT_EQ(ops.size(), static_cast<std::size_t>(2 * m)) << what;
          std::vector<int> forwards(static_cast<std::size_t>(m)), backwards(static_cast<std::size_t>(m));
          std::int64_t next_forward = 0, next_backward = 0;
          for (const PipelineOp& op : ops) {
            ASSERT_TRUE(op.micro >= 0 && op.micro < m) << what;
            if (op.kind == PipelineOpKind::forward) {
              EXPECT_EQ(op.micro, next_forward++) << what << " stage " << s << ": " << describe(ops);
              ++forwards[static_cast<std::size_t>(op.micro)];
            } else {
              EXPECT_EQ(op.micro, next_backward++) << what << " stage " << s << ": " << describe(ops);
              EXPECT_EQ(forwards[static_cast<std::size_t>(op.micro)], 1) << what << ": backward before forward";
              ++backwards[static_cast<std::size_t>(op.micro)];
            }
          }
          EXPECT_EQ(forwards, std::vector<int>(static_cast<std::size_t>(m), 1)) << what;
          EXPECT_EQ(backwards, std::vector<int>(static_cast<std::size_t>(m), 1)) << what;
          const std::int64_t peak = pipeline_peak_in_flight(schedule, p, s, m);
          EXPECT_EQ(count_peak_in_flight(ops), peak) << what << " stage " << s;
          EXPECT_EQ(peak, schedule == gpipe ? m : std::min<std::int64_t>(p - s, m)) << what;
        }
        const double ideal = pipeline_ideal_bubble_fraction(p, m);
        for (double tb : {1.0, 2.0}) {
          const PipelineSimulation sim = simulate_pipeline(schedule, p, m, 1.0, tb);
          ASSERT_TRUE(sim.completed) << what << ": deadlock";
          EXPECT_DOUBLE_EQ(sim.makespan, static_cast<double>(m + p - 1) * (1.0 + tb)) << what;
          for (int s = 0; s < p; ++s) EXPECT_NEAR(sim.idle_fraction[s], ideal, 1e-12) << what << " stage " << s;
        }
      }
    }
  }
}

// The simulation has teeth: a dependency cycle never completes, and a transfer delay lengthens
// the step by one transfer per hop forward and back.
TEST(PipelineSchedule, SimulationDetectsDeadlockAndChargesTransfers) {
  using enum PipelineOpKind;
  // stage 0 waits for backward 0, which needs forward 0 on stage 1, which needs stage 0's forward 0
  const std::vector<std::vector<PipelineOp>> cycle{{{backward, 0}, {forward, 0}}, {{forward, 0}, {backward, 0}}};
  EXPECT_FALSE(simulate_pipeline_ops(cycle, 1, 1.0, 1.0).completed);
  const std::vector<std::vector<PipelineOp>> last_backward_first{{{forward, 0}, {backward, 0}},
                                                                 {{backward, 0}, {forward, 0}}};
  EXPECT_FALSE(simulate_pipeline_ops(last_backward_first, 1, 1.0, 1.0).completed);
  // GPipe, p = 3, m = 2: (m + p − 1)(tf + tb) + 2(p − 1)·transfer
  const PipelineSimulation sim = simulate_pipeline(gpipe, 3, 2, 1.0, 2.0, 0.25);
  ASSERT_TRUE(sim.completed);
  EXPECT_DOUBLE_EQ(sim.makespan, 4 * 3.0 + 4 * 0.25);
}

// Unbalanced stages, GPipe, m = 3: stage 0 (tf 2, tb 4) twice as slow as stage 1 (1, 2).
// Stage 0 forwards 0..6; stage 1 forwards 2..3, 4..5, 6..7 and backwards 7..9, 9..11, 11..13;
// stage 0's backwards wait for those: 9..13, 13..17, 17..21.
TEST(PipelineSchedule, UnbalancedStagesAreBoundByTheSlowest) {
  const PipelineSimulation sim = simulate_pipeline(gpipe, 3, {2.0, 1.0}, {4.0, 2.0});
  ASSERT_TRUE(sim.completed);
  EXPECT_DOUBLE_EQ(sim.makespan, 21.0);
  EXPECT_DOUBLE_EQ(sim.idle_fraction[0], 1.0 - 18.0 / 21.0);
  EXPECT_DOUBLE_EQ(sim.idle_fraction[1], 1.0 - 9.0 / 21.0);
  // balanced again when both are slow: the ideal
  const PipelineSimulation even = simulate_pipeline(one_f_one_b, 3, {2.0, 2.0}, {4.0, 4.0});
  EXPECT_NEAR(even.idle_fraction[0], pipeline_ideal_bubble_fraction(2, 3), 1e-12);
}

// Megatron-LM's interleaved order, written out for p = 2, v = 2, m = 4 (rank 0 warms up
// (p − 1)·2 + (v − 1)·p = 4 forwards, rank 1 two): micro-batches through chunk 0 in groups of p,
// then through chunk 1; backwards chunk 1 first.
TEST(PipelineSchedule, InterleavedListsForTwoStagesTwoChunks) {
  EXPECT_EQ(describe(pipeline_stage_ops(one_f_one_b, 2, 0, 4, 2)),
            "F0 F1 F0c1 F1c1 F2 B0c1 F3 B1c1 F2c1 B0 F3c1 B1 B2c1 B3c1 B2 B3");
  EXPECT_EQ(describe(pipeline_stage_ops(one_f_one_b, 2, 1, 4, 2)),
            "F0 F1 F0c1 B0c1 F1c1 B1c1 F2 B0 F3 B1 F2c1 B2c1 F3c1 B3c1 B2 B3");
}

// For p = 2..4, v = 2..3, m = p, 2p, 3p: on every rank each (micro-batch, chunk) forward and
// backward exactly once, each backward after its forward, per chunk in micro-batch order; the
// per-chunk peak the plan allocates equals the counted one; the ranks' lists run against each
// other (the cross-rank dependencies: chunk c on rank p − 1 feeds chunk c + 1 on rank 0) without
// deadlock, and with balanced chunks and free messages each rank idles (p − 1)(tf + tb) (the
// bubble is (p − 1)/(v·m) of its compute), never more than plain 1F1B with one chunk of v times
// the work.
TEST(PipelineSchedule, InterleavedEveryCaseIsCompleteOrderedAndDeadlockFree) {
  for (int p = 2; p <= 4; ++p) {
    for (std::int64_t v = 2; v <= 3; ++v) {
      for (std::int64_t m = p; m <= 3 * p; m += p) {
        const std::string what = "p=" + std::to_string(p) + " v=" + std::to_string(v) + " m=" + std::to_string(m);
        for (int s = 0; s < p; ++s) {
          const auto ops = pipeline_stage_ops(one_f_one_b, p, s, m, v);
          ASSERT_EQ(ops.size(), static_cast<std::size_t>(2 * m * v)) << what;
          const auto n = static_cast<std::size_t>(m * v);
          std::vector<int> forwards(n), backwards(n);
          std::vector<std::int64_t> next_forward(static_cast<std::size_t>(v)), next_backward(next_forward);
          for (const PipelineOp& op : ops) {
            ASSERT_TRUE(op.micro >= 0 && op.micro < m && op.chunk >= 0 && op.chunk < v) << what;
            const auto at = static_cast<std::size_t>(op.chunk * m + op.micro);
            const auto c = static_cast<std::size_t>(op.chunk);
            if (op.kind == PipelineOpKind::forward) {
              EXPECT_EQ(op.micro, next_forward[c]++) << what << " stage " << s << ": " << describe(ops);
              ++forwards[at];
            } else {
              EXPECT_EQ(op.micro, next_backward[c]++) << what << " stage " << s << ": " << describe(ops);
              EXPECT_EQ(forwards[at], 1) << what << ": backward before forward: " << describe(ops);
              ++backwards[at];
            }
          }
          EXPECT_EQ(forwards, std::vector<int>(n, 1)) << what;
          EXPECT_EQ(backwards, std::vector<int>(n, 1)) << what;
          EXPECT_EQ(ops.back(), (PipelineOp{PipelineOpKind::backward, m - 1, 0})) << what;
          const std::vector<std::int64_t> peaks = pipeline_chunk_peaks_in_flight(one_f_one_b, p, s, m, v);
          ASSERT_EQ(peaks.size(), static_cast<std::size_t>(v)) << what;
          for (std::int64_t c = 0; c < v; ++c) {
            const std::int64_t peak = pipeline_chunk_peak_in_flight(one_f_one_b, p, s, m, v, c);
            EXPECT_EQ(peak, count_peak_in_flight(ops, c)) << what;
            EXPECT_EQ(peaks[static_cast<std::size_t>(c)], peak) << what;
            EXPECT_TRUE(peak >= 1 && peak <= m) << what;
          }
        }
        for (double tb : {1.0, 2.0}) {
          const PipelineSimulation sim = simulate_interleaved_pipeline(p, m, v, 1.0, tb);
          ASSERT_TRUE(sim.completed) << what << ": deadlock";
          const double compute = static_cast<double>(m * v) * (1.0 + tb);
          const double plain = simulate_pipeline(one_f_one_b, p, m, static_cast<double>(v), v * tb).makespan;
          EXPECT_LE(sim.makespan, plain + 1e-9) << what;
          if (tb == 1.0) {
            EXPECT_DOUBLE_EQ(sim.makespan, compute + (p - 1) * (1.0 + tb)) << what;
            EXPECT_NEAR((sim.makespan - compute) / compute, pipeline_interleaved_bubble_ratio(p, m, v), 1e-12);
          }
        }
      }
    }
  }
}

// The simulation's cross-rank dependencies have teeth: rank 0's second chunk cannot start a
// micro-batch before the last rank's first chunk has finished it.
TEST(PipelineSchedule, InterleavedSimulationNeedsTheWrapAroundMessage) {
  using enum PipelineOpKind;
  // rank 0 wants chunk 1's forward before the last rank has run chunk 0 (which waits on rank 0)
  const std::vector<std::vector<PipelineOp>> early{
      {{forward, 0, 1}, {forward, 0, 0}, {backward, 0, 1}, {backward, 0, 0}},
      {{forward, 0, 0}, {forward, 0, 1}, {backward, 0, 1}, {backward, 0, 0}}};
  EXPECT_FALSE(simulate_pipeline_ops(early, 1, 1.0, 1.0).completed);
  const std::vector<std::vector<PipelineOp>> ordered{
      {{forward, 0, 0}, {forward, 0, 1}, {backward, 0, 1}, {backward, 0, 0}},
      {{forward, 0, 0}, {forward, 0, 1}, {backward, 0, 1}, {backward, 0, 0}}};
  const PipelineSimulation sim = simulate_pipeline_ops(ordered, 1, 1.0, 1.0);
  ASSERT_TRUE(sim.completed);
  EXPECT_DOUBLE_EQ(sim.makespan, 8.0);  // one micro-batch through four chunks and back
}

}  // namespace
}  // namespace sb::plan
