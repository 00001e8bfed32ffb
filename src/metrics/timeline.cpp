// SPDX-License-Identifier: Apache-2.0
// Chrome trace JSON for a rank's timeline (Trace Event Format, complete events).
#include "metrics/timeline.hpp"

#include <nlohmann/json.hpp>

#include "core/check.hpp"
#include "core/replace_file.hpp"

namespace sb::metrics {

std::string Timeline::chrome_trace_events(int rank, const std::string& host, double origin_s) const {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank}, {"tid", 0},
                    {"args", {{"name", fmt::format("rank {} ({})", rank, host)}}}});
  for (const TimelineEvent& e : events_) {
    const int tid = e.category == "comm" ? 1 : 0;  // collectives on their own row: overlap shows
    events.push_back({{"name", e.name}, {"cat", e.category}, {"ph", "X"}, {"pid", rank}, {"tid", tid},
                      {"ts", (e.start_s - origin_s) * 1e6}, {"dur", e.seconds * 1e6},
                      {"args", {{"step", e.step}}}});
  }
  return events.dump();
}

void write_chrome_trace(const std::filesystem::path& path, const std::vector<std::string>& rank_event_arrays) {
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& text : rank_event_arrays)
    for (auto& event : nlohmann::json::parse(text)) all.push_back(std::move(event));
  const nlohmann::json trace = {{"traceEvents", std::move(all)}, {"displayTimeUnit", "ms"}};
  replace_file(path, trace.dump() + '\n', "the trace file");
}

}  // namespace sb::metrics
