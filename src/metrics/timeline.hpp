// SPDX-License-Identifier: Apache-2.0
// One rank's timeline of a run (steps, compute, each collective, optimizer, evaluation) and its
// Chrome trace form (the JSON that chrome://tracing and ui.perfetto.dev open: one process per
// rank, complete "X" events in microseconds). Leaves out gathering the ranks (the trainer).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sb::metrics {

struct TimelineEvent {
  std::string name;      // "forward+backward", "all_reduce 6.3 MiB", "optimizer", ...
  std::string category;  // step | compute | comm | optimizer | eval
  double start_s = 0;    // on parallel::comm_clock_seconds()
  double seconds = 0;
  std::int64_t step = 0;
};

class Timeline {
 public:
  void add(std::string name, std::string category, double start_s, double seconds, std::int64_t step) {
    events_.push_back({std::move(name), std::move(category), start_s, seconds, step});
  }
  const std::vector<TimelineEvent>& events() const { return events_; }

  // This rank's events as a JSON array of trace events: pid = rank, times relative to origin_s.
  std::string chrome_trace_events(int rank, const std::string& host, double origin_s) const;

 private:
  std::vector<TimelineEvent> events_;
};

// Writes {"traceEvents": [...], "displayTimeUnit": "ms"} from each rank's chrome_trace_events.
void write_chrome_trace(const std::filesystem::path& path, const std::vector<std::string>& rank_event_arrays);

}  // namespace sb::metrics
