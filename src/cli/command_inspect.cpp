// SPDX-License-Identifier: Apache-2.0
// `scalebench inspect RESULTS.h5 [--json] [--straggler-threshold PCT]`: a human summary of a result file, or its
// attributes as one JSON document (io/results_json.hpp has the keys), with each run's
// stragglers (validate/stragglers.hpp): a rank computing longer than the rest of its stage.
#include <fmt/format.h>

#include <cstdio>

#include "cli/commands.hpp"
#include "io/results_json.hpp"
#include "io/results_reader.hpp"
#include "validate/stragglers.hpp"

namespace sb::cli {

namespace {

std::string straggler_sentence(const validate::Straggler& s, double threshold_pct) {
  std::string sentence = fmt::format(
      "rank {} is a straggler: {:.2f} ms of compute per step against {:.2f} ms on the other ranks of pipeline stage {} "
      "({:+.0f}% step by step, beyond {:.0f}% and the steps' spread of {:.0f}%, over {} steps, judged by {})",
      s.rank, 1e3 * s.compute_s, 1e3 * s.others_s, s.pp_rank, s.excess_pct, threshold_pct, s.spread_pct, s.steps,
      s.basis);
  if (s.arrivals)
    sentence += fmt::format("; at its {} collectives on {} it arrived last {:.0f}% of the time, {:.2f} ms a step after "
                            "the others' median, and {:.0f}% of the ranks' waits there were for it",
                            s.arrivals->collectives, s.arrivals->groups, s.arrivals->last_pct,
                            1e3 * s.arrivals->late_by_s, s.arrivals->waited_for_pct);
  return sentence;
}

std::string stragglers_text(const std::string& path, double threshold_pct) {
  std::string text;
  for (const std::string& id : io::list_runs(path))
    for (const validate::Straggler& s : validate::find_stragglers(path, id, threshold_pct))
      text += fmt::format("run {}: {}\n", id, straggler_sentence(s, threshold_pct));
  return text;
}

// Each run of inspect's JSON gains "stragglers": [{"rank", "pp_rank", "steps", "compute_s",
// "others_s", "excess_pct", "spread_pct", "basis", "arrivals"}] (empty when none; "arrivals" is
// {"collectives", "last_pct", "late_by_s", "waited_for_pct", "groups"}, or null for a file without the collectives
// table) and "straggler_threshold_pct".
void add_stragglers(nlohmann::json& document, const std::string& path, double threshold_pct) {
  for (auto& run : document.at("runs")) {
    nlohmann::json list = nlohmann::json::array();
    for (const validate::Straggler& s : validate::find_stragglers(path, run.at("id").get<std::string>(), threshold_pct)) {
      nlohmann::json arrivals = nullptr;
      if (s.arrivals)
        arrivals = {{"collectives", s.arrivals->collectives}, {"last_pct", s.arrivals->last_pct},
                    {"late_by_s", s.arrivals->late_by_s}, {"waited_for_pct", s.arrivals->waited_for_pct},
                    {"groups", s.arrivals->groups}};
      list.push_back({{"rank", s.rank}, {"pp_rank", s.pp_rank}, {"steps", s.steps}, {"compute_s", s.compute_s},
                      {"others_s", s.others_s}, {"excess_pct", s.excess_pct}, {"spread_pct", s.spread_pct},
                      {"basis", s.basis}, {"arrivals", arrivals}});
    }
    run["stragglers"] = list;
    run["straggler_threshold_pct"] = threshold_pct;
  }
}

}  // namespace

std::function<int()> add_inspect_command(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto threshold_pct = std::make_shared<double>(validate::kStragglerThresholdPct);
  CLI::App* cmd = app.add_subcommand("inspect", "print a human summary of a result file");
  cmd->add_option("file", *path, "result file (HDF5)")->required();
  cmd->add_flag("--json", *json, "print every run's attributes, context, summary, prediction and stragglers as JSON");
  cmd->add_option("--straggler-threshold", *threshold_pct,
                  "name a rank a straggler when its median compute per step exceeds its stage's other ranks' by more "
                  "than this many percent (and the steps' spread)")
      ->check(CLI::Range(0.0, 1000.0))
      ->default_val(validate::kStragglerThresholdPct);
  return [path, json, threshold_pct]() {
    if (*json) {
      nlohmann::json document = io::results_json(*path);
      add_stragglers(document, *path, *threshold_pct);
      std::puts(document.dump(2).c_str());
    } else {
      std::fputs(io::summarize_results(*path).c_str(), stdout);
      std::fputs(stragglers_text(*path, *threshold_pct).c_str(), stdout);
    }
    return 0;
  };
}

}  // namespace sb::cli
