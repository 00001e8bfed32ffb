// SPDX-License-Identifier: Apache-2.0
// `scalebench compare A.h5 B.h5 [--tolerance PCT] [--json]`: two result files run by run (a
// nightly check against last night's, a re-test against the acceptance run). Prints, per run in
// both, each figure's change from A to B with the spread the runs' own noise allows and a
// verdict; exit 0 without a regression, 1 with one (a figure worse beyond the tolerance and the
// spread), 2 (a UserError, via main) for a missing or foreign file or files with no run in
// common. Leaves out reading and judging (validate/run_comparison.hpp).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "core/bounded_file.hpp"
#include "core/check.hpp"
#include "measure/row_printer.hpp"
#include "validate/run_comparison.hpp"

namespace sb::cli {

namespace {

struct CompareOptions {
  std::string a, b;
  double tolerance_pct = 5.0;
  bool json = false;
};

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

std::string figure_heading(const validate::FigureChange& c) {
  return c.unit.empty() ? c.figure : fmt::format("{} ({})", c.figure, c.unit);
}

void print_comparison(const CompareOptions& o, const validate::Comparison& cmp) {
  std::printf("compare %s (A) with %s (B): tolerance %.3g%%, spread = 3 standard errors of the median step times\n",
              o.a.c_str(), o.b.c_str(), cmp.tolerance_pct);
  const measure::RowPrinter rows(stdout, {{"run", 30, 0, true}, {"figure", 26, 0, true}, {"A", 12, 4},
                                          {"B", 12, 4}, {"change %", 10, 2}, {"spread %", 9, 2},
                                          {"verdict", 13, 0, true}});
  rows.header();
  for (const validate::FigureChange& c : cmp.changes)
    rows.row({c.run, figure_heading(c), c.a, c.b, c.change_pct, c.spread_pct, std::string(change_name(c.verdict))});
  if (!cmp.only_in_a.empty()) std::printf("only in A: %s\n", fmt::format("{}", fmt::join(cmp.only_in_a, ", ")).c_str());
  if (!cmp.only_in_b.empty()) std::printf("only in B: %s\n", fmt::format("{}", fmt::join(cmp.only_in_b, ", ")).c_str());
  const auto regressions = cmp.regressions();
  if (regressions.empty()) {
    std::printf("no regression beyond %.3g%%\n", cmp.tolerance_pct);
    return;
  }
  std::printf("%zu regression(s) beyond %.3g%% and the spread:\n", regressions.size(), cmp.tolerance_pct);
  for (const validate::FigureChange* c : regressions)
    std::printf("  %s %s %+.1f%%\n", c->run.c_str(), c->figure.c_str(), c->change_pct);
}

// {"a", "b", "tolerance_pct", "regression", "changes": [{"run", "figure", "unit", "a", "b",
// "change_pct", "spread_pct", "verdict"}], "only_in_a", "only_in_b"}; a missing figure is null
nlohmann::json comparison_json(const CompareOptions& o, const validate::Comparison& cmp) {
  nlohmann::json changes = nlohmann::json::array();
  for (const validate::FigureChange& c : cmp.changes)
    changes.push_back({{"run", c.run}, {"figure", c.figure}, {"unit", c.unit}, {"a", number_or_null(c.a)},
                       {"b", number_or_null(c.b)}, {"change_pct", number_or_null(c.change_pct)},
                       {"spread_pct", number_or_null(c.spread_pct)}, {"verdict", change_name(c.verdict)}});
  return {{"a", o.a}, {"b", o.b}, {"tolerance_pct", cmp.tolerance_pct}, {"regression", !cmp.regressions().empty()},
          {"changes", changes}, {"only_in_a", cmp.only_in_a}, {"only_in_b", cmp.only_in_b}};
}

}  // namespace

std::function<int()> add_compare_command(CLI::App& app) {
  auto o = std::make_shared<CompareOptions>();
  CLI::App* cmd = app.add_subcommand("compare", "compare two result files run by run; exit 1 on a regression");
  cmd->add_option("a", o->a, "the reference result file (HDF5)")->required();
  cmd->add_option("b", o->b, "the result file judged against it (HDF5)")->required();
  cmd->add_option("--tolerance", o->tolerance_pct, "percent a figure may move before it counts (default 5)")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "print the comparison as JSON instead of a table (same exit status)");
  return [o]() {
    for (const std::string& file : {o->a, o->b}) {
      SB_USER_CHECK(std::filesystem::exists(file), "compare: result file '{}' does not exist", file);
      require_regular_file(file, "compare: result file");
    }
    const validate::Comparison cmp =
        validate::compare_runs(validate::read_run_figures(o->a), validate::read_run_figures(o->b), o->tolerance_pct);
    if (o->json)
      std::puts(comparison_json(*o, cmp).dump(2).c_str());
    else
      print_comparison(*o, cmp);
    return cmp.regressions().empty() ? 0 : 1;
  };
}

}  // namespace sb::cli
