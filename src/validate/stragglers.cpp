// SPDX-License-Identifier: Apache-2.0
// Per-rank compute medians against the other ranks of the stage.
#include "validate/stragglers.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "core/statistics.hpp"
#include "io/results_reader.hpp"

namespace sb::validate {

namespace {

struct RankSteps {
  std::vector<double> compute;  // steady steps
  double median_s = 0, mad_s = 0;
};

}  // namespace

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
  const auto compute = io::read_column(file, timeline, "compute_s");
  const double first_step = *std::min_element(steps.begin(), steps.end());
  std::map<int, RankSteps> per_rank;
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i] > first_step) per_rank[static_cast<int>(rank_of_row[i])].compute.push_back(compute[i]);
  for (auto& [rank, r] : per_rank) {
    r.median_s = median(r.compute);
    r.mad_s = median_absolute_deviation(r.compute);
  }
  std::vector<Straggler> found;
  for (const auto& [rank, r] : per_rank) {
    std::vector<double> others, others_mad;
    for (const auto& [other, o] : per_rank)
      if (other != rank && stage_of[other] == stage_of[rank]) {
        others.push_back(o.median_s);
        others_mad.push_back(o.mad_s);
      }
    if (others.empty() || r.compute.empty()) continue;
    Straggler s;
    s.rank = rank;
    s.pp_rank = stage_of[rank];
    s.steps = static_cast<std::int64_t>(r.compute.size());
    s.compute_s = r.median_s;
    s.others_s = median(others);
    if (!(s.others_s > 0)) continue;
    s.excess_pct = (s.compute_s - s.others_s) / s.others_s * 100.0;
    const double n = static_cast<double>(r.compute.size());
    const double others_n = n * static_cast<double>(others.size());  // the others' steps together
    s.spread_pct = 3.0 * median_difference_standard_error(r.mad_s, n, median(others_mad), others_n) / s.others_s * 100.0;
    if (s.excess_pct > std::max(threshold_pct, s.spread_pct)) found.push_back(s);
  }
  std::sort(found.begin(), found.end(), [](const Straggler& a, const Straggler& b) { return a.excess_pct > b.excess_pct; });
  return found;
}

}  // namespace sb::validate
