// SPDX-License-Identifier: Apache-2.0
// Run-by-run comparison of two result files.
#include "validate/run_comparison.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/check.hpp"
#include "core/statistics.hpp"
#include "io/results_reader.hpp"

namespace sb::validate {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
double number_or_nan(const std::filesystem::path& file, const std::string& object, const std::string& name) {
  if (!io::has_object(file, object)) return kNaN;
  for (const auto& [key, value] : io::read_attributes(file, object))
    if (key == name) return io::read_number_attribute(file, object, name);
  return kNaN;
}

RunFigures figures_of(const std::filesystem::path& file, const std::string& id) {
  const std::string run = "/runs/" + id;
  RunFigures r;
  r.id = id;
  r.model = io::read_string_attribute(file, run, "model");
  r.status = io::read_string_attribute(file, run, "status");
  r.step_s = r.step_mad_s = r.throughput = r.peak_bytes = r.accuracy = r.eval_loss = r.prediction_error_pct = kNaN;
  r.step_ci95_half_s = kNaN;
  if (io::has_object(file, run + "/steps") && io::count_rows(file, run + "/steps") > 0) {
    std::vector<double> steps = io::read_column(file, run + "/steps", "step_time_s");
    if (steps.size() > 1) steps.erase(steps.begin());  // the first step pays page faults
    r.timed_steps = static_cast<std::int64_t>(steps.size());
    r.step_s = median(steps);
    r.step_mad_s = median_absolute_deviation(steps);
  }
  const std::string summary = run + "/summary";
  const double tokens = number_or_nan(file, summary, "tokens_per_s");
  const bool text = std::isfinite(tokens) && tokens > 0;
  r.throughput = text ? tokens : number_or_nan(file, summary, "samples_per_s");
  r.throughput_unit = text ? "tokens/s" : "samples/s";
  r.peak_bytes = number_or_nan(file, summary, "peak_bytes");
  r.accuracy = number_or_nan(file, summary, "final_accuracy");
  r.eval_loss = number_or_nan(file, summary, "final_eval_loss");
  const std::string prediction = run + "/prediction";
  if (number_or_nan(file, prediction, "feasible") == 1.0)
    r.prediction_error_pct = number_or_nan(file, prediction, "error_step_time_pct");
  return r;
}

double change_pct(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b) || a == 0) return kNaN;
  return (b - a) / std::abs(a) * 100.0;
}

Change judge(double change, double spread, double tolerance, Direction direction) {
  if (direction == Direction::neither) return std::isfinite(change) && change != 0 ? Change::informational : Change::same;
  if (!std::isfinite(change) || std::abs(change) <= tolerance) return Change::same;
  const bool worse = direction == Direction::lower_is_better ? change > 0 : change < 0;
  if (std::abs(change) <= spread) return Change::noise;
  return worse ? Change::worse : Change::better;
}

struct FigureSpec {
  const char* name;
  const char* unit;
  Direction direction;
  double (*value)(const RunFigures&);
  bool timed;  // spread from the step times
};

const FigureSpec kFigures[] = {
    {"step time", "ms", Direction::lower_is_better, [](const RunFigures& r) { return r.step_s * 1e3; }, true},
    {"throughput", "", Direction::higher_is_better, [](const RunFigures& r) { return r.throughput; }, true},
    {"peak memory", "MiB", Direction::lower_is_better, [](const RunFigures& r) { return r.peak_bytes / 1048576.0; }, false},
    {"accuracy", "%", Direction::higher_is_better, [](const RunFigures& r) { return r.accuracy * 100.0; }, false},
    {"held-out loss", "", Direction::lower_is_better, [](const RunFigures& r) { return r.eval_loss; }, false},
    {"prediction error", "%", Direction::neither, [](const RunFigures& r) { return r.prediction_error_pct; }, false},
};

RunFigures repeat_figures(const std::filesystem::path& file, const std::string& case_id) {
  const std::string group = "/repeats/" + case_id;
  RunFigures r;
  r.id = case_id + " (repeats)";
  r.status = "ok";
  r.timed_steps = static_cast<std::int64_t>(number_or_nan(file, group, "finished"));
  r.step_s = number_or_nan(file, group, "step_time_median_s");
  r.step_ci95_half_s =
      (number_or_nan(file, group, "step_time_ci95_high_s") - number_or_nan(file, group, "step_time_ci95_low_s")) / 2;
  r.step_mad_s = r.throughput = r.peak_bytes = r.accuracy = r.eval_loss = r.prediction_error_pct = kNaN;
  return r;
}

// The spread of the difference of two step times, relative to a's, in percent: over repeats
// the two 95% half-intervals combined; within runs 3 standard errors of the difference of the
// two medians, each from its steps' MAD.
double step_spread_pct(const RunFigures& a, const RunFigures& b) {
  if (std::isfinite(a.step_ci95_half_s) && std::isfinite(b.step_ci95_half_s) && a.step_s > 0)
    return std::hypot(a.step_ci95_half_s, b.step_ci95_half_s) / a.step_s * 100.0;
  if (!(a.step_s > 0) || !std::isfinite(a.step_mad_s) || !std::isfinite(b.step_mad_s)) return 0.0;
  const double na = static_cast<double>(std::max<std::int64_t>(1, a.timed_steps));
  const double nb = static_cast<double>(std::max<std::int64_t>(1, b.timed_steps));
  return 3.0 * median_difference_standard_error(a.step_mad_s, na, b.step_mad_s, nb) / a.step_s * 100.0;
}

}  // namespace

std::vector<RunFigures> read_run_figures(const std::filesystem::path& file) {
  const std::vector<std::string> ids = io::list_runs(file);
  SB_USER_CHECK(!ids.empty(), "compare: {} holds no run", file.string());
  std::vector<RunFigures> runs;
  for (const std::string& id : ids) runs.push_back(figures_of(file, id));
  for (const std::string& case_id : io::list_members(file, "/repeats")) runs.push_back(repeat_figures(file, case_id));
  return runs;
}

const char* change_name(Change change) {
  switch (change) {
    case Change::same: return "same";
    case Change::better: return "better";
    case Change::worse: return "worse";
    case Change::noise: return "within noise";
    case Change::informational: return "changed";
  }
  return "?";
}

std::vector<const FigureChange*> Comparison::regressions() const {
  std::vector<const FigureChange*> worse;
  for (const FigureChange& c : changes)
    if (c.verdict == Change::worse) worse.push_back(&c);
  return worse;
}

Comparison compare_runs(const std::vector<RunFigures>& a, const std::vector<RunFigures>& b, double tolerance_pct) {
  SB_USER_CHECK(std::isfinite(tolerance_pct) && tolerance_pct >= 0,
                "compare: --tolerance must be a percentage of zero or more, got {}", tolerance_pct);
  Comparison out;
  out.tolerance_pct = tolerance_pct;
  std::map<std::string, const RunFigures*> in_b;
  for (const RunFigures& r : b) in_b[r.id] = &r;
  for (const RunFigures& ra : a) {
    const auto found = in_b.find(ra.id);
    if (found == in_b.end()) {
      out.only_in_a.push_back(ra.id);
      continue;
    }
    const RunFigures& rb = *found->second;
    in_b.erase(found);
    if (ra.status != "ok" || rb.status != "ok") {
      FigureChange c{ra.id, "status", "", ra.status == "ok" ? 1.0 : 0.0, rb.status == "ok" ? 1.0 : 0.0, kNaN, 0};
      c.verdict = ra.status == rb.status ? Change::same : rb.status == "ok" ? Change::better : Change::worse;
      out.changes.push_back(c);
      continue;
    }
    const double spread = step_spread_pct(ra, rb);
    for (const FigureSpec& f : kFigures) {
      FigureChange c;
      c.run = ra.id;
      c.figure = f.name;
      c.unit = *f.unit ? f.unit : (f.timed ? ra.throughput_unit : "");
      c.a = f.value(ra);
      c.b = f.value(rb);
      if (!std::isfinite(c.a) && !std::isfinite(c.b)) continue;  // neither run has it (no evaluation)
      c.change_pct = f.direction == Direction::neither ? c.b - c.a : change_pct(c.a, c.b);
      // throughput is 1/step: its relative spread is the step time's relative to b's step
      c.spread_pct = !f.timed ? 0.0 : f.direction == Direction::higher_is_better && rb.step_s > 0 ? spread * ra.step_s / rb.step_s
                                                                                                  : spread;
      c.verdict = judge(c.change_pct, c.spread_pct, tolerance_pct, f.direction);
      out.changes.push_back(c);
    }
  }
  for (const auto& [id, run] : in_b) out.only_in_b.push_back(id);
  SB_USER_CHECK(!out.changes.empty(), "compare: the two files share no run id (A has {}, B has {})",
                fmt::join(out.only_in_a, ", "), fmt::join(out.only_in_b, ", "));
  return out;
}

}  // namespace sb::validate
