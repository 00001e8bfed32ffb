// SPDX-License-Identifier: Apache-2.0
// Ranks' arrivals at each collective, compared within the call (see collective_arrivals.hpp).
#include "validate/collective_arrivals.hpp"

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "core/statistics.hpp"
#include "io/results_reader.hpp"

namespace sb::validate {

namespace {

// One call of one group in one step, as every rank of the group saw it.
using CallKey = std::tuple<double, std::string, double, double>;  // step, group, group_root, index

struct Arrival {
  int rank;
  double compute_before_s;
};

struct RankTally {
  std::map<double, double> late_by_s;  // step -> the sum over its collectives
  std::int64_t collectives = 0, last = 0;
  double waited_for_s = 0;
  std::set<std::string> groups;
};

// Each rank's lateness at one call: its compute before the call less the others' median; the
// rank with the longest compute before it, if only one, arrived last, and every other rank
// waited for it the difference.
void tally_call(double step, const std::string& group, const std::vector<Arrival>& arrivals,
                std::map<int, RankTally>& tallies, double& all_waits_s) {
  const auto longest = std::max_element(arrivals.begin(), arrivals.end(), [](const Arrival& a, const Arrival& b) {
    return a.compute_before_s < b.compute_before_s;
  });
  const auto ties = std::count_if(arrivals.begin(), arrivals.end(), [&](const Arrival& a) {
    return a.compute_before_s == longest->compute_before_s;
  });
  for (const Arrival& a : arrivals) {
    std::vector<double> others;
    for (const Arrival& o : arrivals)
      if (o.rank != a.rank) others.push_back(o.compute_before_s);
    RankTally& t = tallies[a.rank];
    t.late_by_s[step] += a.compute_before_s - median(others);
    ++t.collectives;
    t.groups.insert(group);
    const double waits_s = longest->compute_before_s - a.compute_before_s;
    all_waits_s += waits_s;
    tallies[longest->rank].waited_for_s += waits_s;
    if (ties == 1 && a.rank == longest->rank) ++t.last;
  }
}

std::string joined(const std::set<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ",") + n;
  return text;
}

}  // namespace

std::map<int, Arrivals> collective_arrivals(const std::filesystem::path& file, const std::string& run_id) {
  const std::string table = "/runs/" + run_id + "/collectives";
  if (!io::has_object(file, table) || io::count_rows(file, table) == 0) return {};
  const auto steps = io::read_column(file, table, "step");
  const auto ranks = io::read_column(file, table, "rank");
  const auto roots = io::read_column(file, table, "group_root");
  const auto indices = io::read_column(file, table, "index");
  const auto compute_before = io::read_column(file, table, "compute_before_s");
  const auto groups = io::read_string_column(file, table, "group");
  const auto kinds = io::read_string_column(file, table, "collective");
  const double first_step = *std::min_element(steps.begin(), steps.end());
  std::map<CallKey, std::vector<Arrival>> calls;
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i] > first_step && kinds[i] != "send" && kinds[i] != "recv")
      calls[{steps[i], groups[i], roots[i], indices[i]}].push_back({static_cast<int>(ranks[i]), compute_before[i]});
  std::map<int, RankTally> tallies;
  double all_waits_s = 0;
  for (const auto& [key, arrivals] : calls)
    if (arrivals.size() > 1) tally_call(std::get<0>(key), std::get<1>(key), arrivals, tallies, all_waits_s);
  std::map<int, Arrivals> result;
  for (const auto& [rank, t] : tallies) {
    std::vector<double> per_step;
    for (const auto& [step, seconds] : t.late_by_s) per_step.push_back(seconds);
    result[rank] = {.collectives = t.collectives,
                    .last_pct = 100.0 * static_cast<double>(t.last) / static_cast<double>(t.collectives),
                    .late_by_s = median(per_step),
                    .waited_for_pct = all_waits_s > 0 ? 100.0 * t.waited_for_s / all_waits_s : 0.0,
                    .groups = joined(t.groups)};
  }
  return result;
}

}  // namespace sb::validate
