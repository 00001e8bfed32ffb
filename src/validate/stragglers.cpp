// SPDX-License-Identifier: Apache-2.0
// Per-rank compute, step by step, against the other ranks of the stage in the same step.
#include "validate/stragglers.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "core/statistics.hpp"
#include "io/results_reader.hpp"

namespace sb::validate {

namespace {

struct RankSteps {
  std::map<double, double> compute_by_step;  // steady steps: step -> compute_s
  std::vector<double> paired_ratio;          // per step: compute over the stage's other ranks' median then
};

}  // namespace

// Step by step, not median against median: a machine whose speed wanders slows every rank of a
// step alike, and the ratio within the step cancels it; what is left is the rank's own excess.
std::vector<Straggler> find_stragglers(const std::filesystem::path& file, const std::string& run_id,
                                       double threshold_pct) {
  const std::string run = "/runs/" + run_id;
  const std::string timeline = run + "/timeline", ranks = run + "/ranks";
  if (!io::has_object(file, timeline) || !io::has_object(file, ranks) || io::count_rows(file, timeline) == 0) return {};
  std::map<int, int> stage_of;  // rank -> pp_rank
  const auto rank_ids = io::read_column(file, ranks, "rank");
  const auto pp_ranks = io::read_column(file, ranks, "pp_rank");
  for (std::size_t i = 0; i < rank_ids.size(); ++i) stage_of[static_cast<int>(rank_ids[i])] = static_cast<int>(pp_ranks[i]);
  const auto steps = io::read_column(file, timeline, "step");
  const auto rank_of_row = io::read_column(file, timeline, "rank");
  const std::vector<std::string> fields = io::list_fields(file, timeline);
  const std::string basis =
      std::find(fields.begin(), fields.end(), "compute_cpu_s") != fields.end() ? "compute_cpu_s" : "compute_s";
  const auto compute = io::read_column(file, timeline, basis);
  const double first_step = *std::min_element(steps.begin(), steps.end());
  std::map<int, RankSteps> per_rank;
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i] > first_step) per_rank[static_cast<int>(rank_of_row[i])].compute_by_step[steps[i]] = compute[i];
  std::vector<Straggler> found;
  for (auto& [rank, r] : per_rank) {
    std::vector<double> own, others_medians;
    for (const auto& [step, seconds] : r.compute_by_step) {
      std::vector<double> others_now;
      for (const auto& [other, o] : per_rank)
        if (other != rank && stage_of[other] == stage_of[rank])
          if (const auto it = o.compute_by_step.find(step); it != o.compute_by_step.end()) others_now.push_back(it->second);
      const double others_median = median(others_now);
      if (others_now.empty() || !(others_median > 0)) continue;
      own.push_back(seconds);
      others_medians.push_back(others_median);
      r.paired_ratio.push_back(seconds / others_median);
    }
    if (r.paired_ratio.empty()) continue;
    Straggler s;
    s.rank = rank;
    s.pp_rank = stage_of[rank];
    s.steps = static_cast<std::int64_t>(r.paired_ratio.size());
    s.basis = basis;
    s.compute_s = median(own);
    s.others_s = median(others_medians);
    s.excess_pct = (median(r.paired_ratio) - 1.0) * 100.0;
    const double n = static_cast<double>(r.paired_ratio.size());
    s.spread_pct = 3.0 * median_difference_standard_error(median_absolute_deviation(r.paired_ratio), n, 0.0, 1.0) * 100.0;
    if (s.excess_pct > std::max(threshold_pct, s.spread_pct)) found.push_back(s);
  }
  std::sort(found.begin(), found.end(), [](const Straggler& a, const Straggler& b) { return a.excess_pct > b.excess_pct; });
  if (!found.empty()) {
    const std::map<int, Arrivals> arrivals = collective_arrivals(file, run_id);
    for (Straggler& s : found)
      if (const auto it = arrivals.find(s.rank); it != arrivals.end()) s.arrivals = it->second;
  }
  return found;
}

}  // namespace sb::validate
