// SPDX-License-Identifier: Apache-2.0
// The verdicts of compare_runs on figures written by hand: the tolerance, the spread, the
// direction of each figure, unmatched runs, failed runs and bad input. Real files are compared in
// tests/cli/check_compare.py.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/check.hpp"
#include "validate/run_comparison.hpp"

namespace {

using sb::validate::Change;
using sb::validate::compare_runs;
using sb::validate::FigureChange;
using sb::validate::RunFigures;

RunFigures run(const std::string& id, double step_ms, double mad_ms = 0.0) {
  RunFigures r;
  r.id = id;
  r.model = "gpt-nano";
  r.status = "ok";
  r.timed_steps = 9;
  r.step_s = step_ms / 1e3;
  r.step_mad_s = mad_ms / 1e3;
  r.throughput = 1e6 / step_ms;
  r.throughput_unit = "tokens/s";
  r.peak_bytes = 64.0 * 1048576;
  r.accuracy = 0.5;
  r.eval_loss = 2.0;
  r.prediction_error_pct = std::numeric_limits<double>::quiet_NaN();
  return r;
}

const FigureChange& figure(const sb::validate::Comparison& c, const std::string& id, const std::string& name) {
  for (const FigureChange& f : c.changes)
    if (f.run == id && f.figure == name) return f;
  throw std::runtime_error("no " + name + " of " + id);
}

TEST(RunComparison, ASlowerStepBeyondToleranceAndSpreadIsARegression) {
  const auto c = compare_runs({run("a", 100, 1)}, {run("a", 120, 1)}, 5.0);
  const FigureChange& step = figure(c, "a", "step time");
  EXPECT_NEAR(step.change_pct, 20.0, 1e-9);
  // 3 standard errors of the difference of the medians over 9 steps each, % of 100 ms
  EXPECT_NEAR(step.spread_pct, 3 * 1.2533 * 1.4826 * std::sqrt(2.0 / 9), 1e-9);
  EXPECT_EQ(step.verdict, Change::worse);
  EXPECT_EQ(figure(c, "a", "throughput").verdict, Change::worse);
  EXPECT_EQ(figure(c, "a", "peak memory").verdict, Change::same);
  EXPECT_EQ(c.regressions().size(), 2u);
}

TEST(RunComparison, WithinToleranceIsTheSameAndBeyondItButInsideTheSpreadIsNoise) {
  EXPECT_EQ(figure(compare_runs({run("a", 100)}, {run("a", 104)}, 5.0), "a", "step time").verdict, Change::same);
  const auto noisy = compare_runs({run("a", 100, 30)}, {run("a", 130, 30)}, 5.0);  // spread 37.2%
  EXPECT_EQ(figure(noisy, "a", "step time").verdict, Change::noise);
  EXPECT_TRUE(noisy.regressions().empty());
}

TEST(RunComparison, EachFigureHasItsDirection) {
  RunFigures b = run("a", 80);
  b.peak_bytes *= 2;      // more memory: worse
  b.accuracy = 0.4;       // less accurate: worse
  b.eval_loss = 1.5;      // lower loss: better
  b.prediction_error_pct = 12.0;
  RunFigures a = run("a", 100);
  a.prediction_error_pct = 3.0;
  const auto c = compare_runs({a}, {b}, 5.0);
  EXPECT_EQ(figure(c, "a", "step time").verdict, Change::better);
  EXPECT_EQ(figure(c, "a", "throughput").verdict, Change::better);
  EXPECT_EQ(figure(c, "a", "peak memory").verdict, Change::worse);
  EXPECT_EQ(figure(c, "a", "accuracy").verdict, Change::worse);
  EXPECT_EQ(figure(c, "a", "held-out loss").verdict, Change::better);
  const FigureChange& error = figure(c, "a", "prediction error");
  EXPECT_EQ(error.verdict, Change::informational);  // never a regression by itself
  EXPECT_DOUBLE_EQ(error.change_pct, 9.0);          // points
  EXPECT_EQ(c.regressions().size(), 2u);
}

TEST(RunComparison, UnmatchedRunsAreListedAndAFailedRunIsComparedOnItsStatus) {
  RunFigures failed = run("b", 100);
  failed.status = "failed";
  const auto c = compare_runs({run("a", 100), run("b", 100), run("only-a", 1)}, {run("a", 100), failed, run("only-b", 1)},
                              5.0);
  EXPECT_EQ(c.only_in_a, std::vector<std::string>{"only-a"});
  EXPECT_EQ(c.only_in_b, std::vector<std::string>{"only-b"});
  const FigureChange& status = figure(c, "b", "status");
  EXPECT_EQ(status.verdict, Change::worse);
  EXPECT_EQ(c.regressions().size(), 1u);
}

TEST(RunComparison, ACaseOverRepeatsTakesItsIntervalsAsTheSpread) {
  RunFigures a = run("c (repeats)", 100), b = run("c (repeats)", 110);
  a.step_ci95_half_s = 0.003;  // ±3 ms and ±4 ms: the difference's half-interval is 5 ms
  b.step_ci95_half_s = 0.004;
  const FigureChange& step = figure(compare_runs({a}, {b}, 5.0), "c (repeats)", "step time");
  EXPECT_NEAR(step.spread_pct, 5.0, 1e-9);
  EXPECT_EQ(step.verdict, Change::worse);  // +10% beyond 5% and the 5% spread
  b.step_ci95_half_s = 0.012;              // ±12.4 ms combined: within noise
  EXPECT_EQ(figure(compare_runs({a}, {b}, 5.0), "c (repeats)", "step time").verdict, Change::noise);
}

TEST(RunComparison, NoCommonRunOrANegativeToleranceIsRefused) {
  EXPECT_THROW(compare_runs({run("a", 1)}, {run("b", 1)}, 5.0), sb::UserError);
  EXPECT_THROW(compare_runs({run("a", 1)}, {run("a", 1)}, -1.0), sb::UserError);
}

}  // namespace
