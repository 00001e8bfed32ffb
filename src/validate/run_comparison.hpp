// SPDX-License-Identifier: Apache-2.0
// Two result files compared run by run (`scalebench compare`): the runs matched by id (a suite's
// case, or a train run's id), and per figure the change from A to B, the spread the two runs'
// own step-to-step noise allows, and whether the change is a regression beyond a tolerance (what
// a centre's nightly check or a procurement re-test asks). Leaves out printing (cli/) and
// repeats across runs (a figure's spread here is within each run).
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

namespace sb::validate {

// What compare reads of one run: its median step time after the first step (which pays page
// faults) and the median absolute deviation of those steps, throughput, the largest tracked
// memory of a rank, the final accuracy and held-out loss, and the cost model's step-time error.
struct RunFigures {
  std::string id, model, status;
  std::int64_t timed_steps = 0;       // steps after the first
  double step_s = 0, step_mad_s = 0;  // median and MAD of those steps
  double throughput = 0;              // tokens/s (text) or samples/s (images)
  std::string throughput_unit;
  double peak_bytes = 0;
  double accuracy = 0, eval_loss = 0;  // NaN when the run has no evaluation
  double prediction_error_pct = 0;     // NaN without a feasible prediction
  // A case over its repeats (id "<case> (repeats)", from /repeats/<case>): half of Student's 95%
  // interval of the repeats' mean step time, the spread used instead of the MAD; NaN for a run.
  double step_ci95_half_s = std::numeric_limits<double>::quiet_NaN();
};
// Every run of a result file, sorted by id, then each case of a suite run with repeats, over its
// repeats ("<case> (repeats)": the median step time and its interval, the other figures left
// out). UserError naming the file when it is not a scalebench result file or holds no run.
std::vector<RunFigures> read_run_figures(const std::filesystem::path& file);

enum class Direction { lower_is_better, higher_is_better, neither };
enum class Change { same, better, worse, noise, informational };
const char* change_name(Change change);  // "same", "better", "worse", "within noise", "changed"

struct FigureChange {
  std::string run, figure, unit;
  double a = 0, b = 0;
  double change_pct = 0;  // (b - a) / |a| in percent (the prediction error: b - a in points); NaN when one is missing
  double spread_pct = 0;  // 3 standard errors of the difference, in percent of a (0: no spread known)
  Change verdict = Change::same;
};

struct Comparison {
  std::vector<FigureChange> changes;  // per common run, in id order, the figures in a fixed order
  std::vector<std::string> only_in_a, only_in_b;
  double tolerance_pct = 0;
  std::vector<const FigureChange*> regressions() const;
};

// A worse figure is a regression when it moved against its direction by more than the tolerance
// and by more than the spread; a move beyond the tolerance but inside the spread is "within
// noise". The spread of step time and throughput is 3 standard errors of the difference of the
// two median step times, 3·1.2533·1.4826·sqrt(MAD_a²/n_a + MAD_b²/n_b), relative to a (for cases over repeats: sqrt(h_a² + h_b²) of their 95% half-intervals); memory, accuracy and loss are exact in these runs (no spread). A run
// that did not end "ok" in either file is compared on status only. UserError when the files
// share no run or the tolerance is negative.
Comparison compare_runs(const std::vector<RunFigures>& a, const std::vector<RunFigures>& b, double tolerance_pct);

}  // namespace sb::validate
