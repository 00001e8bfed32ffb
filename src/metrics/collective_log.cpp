// SPDX-License-Identifier: Apache-2.0
// A step's calls as rows of the collectives table (see collective_log.hpp).
#include "metrics/collective_log.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <string_view>
#include <utility>

namespace sb::metrics {

namespace {

void copy_name(char (&to)[io::kCollectiveNameBytes], std::string_view name) {
  std::memcpy(to, name.data(), std::min(name.size(), sizeof(to) - 1));
}

// When the rank was inside a call waiting for it: [wait_start_s, completion].
struct Wait {
  double start_s, end_s;
};

std::vector<Wait> waits_of(const std::vector<StepCall>& calls) {
  std::vector<Wait> waits;
  for (const StepCall& call : calls)
    if (call.record->wait_start_s >= 0) waits.push_back({call.record->wait_start_s, call.record->start_s + call.record->seconds});
  return waits;
}

// The end of the rank's last wait that was over by `when`, or the step's start.
double free_since(const std::vector<Wait>& waits, double when, double step_start_s) {
  double since = step_start_s;
  for (const Wait& w : waits)
    if (w.end_s <= when) since = std::max(since, w.end_s);
  return since;
}

}  // namespace

CollectiveLog::CollectiveLog(std::int64_t total_steps)
    : stride_(std::max<std::int64_t>(1, (total_steps + kMaxSteps - 1) / kMaxSteps)) {}

bool CollectiveLog::logs(std::int64_t step) const { return (step - 1) % stride_ == 0 && rows_.size() < kMaxRows; }

void CollectiveLog::add_step(std::int64_t step, int rank, double step_start_s, const std::vector<StepCall>& calls) {
  if (!logs(step)) return;
  const std::vector<Wait> waits = waits_of(calls);
  std::map<const CommGroup*, std::int64_t> next_index;
  for (const StepCall& call : calls) {
    if (call.group->comm->size() < 2) continue;  // nobody to meet
    const parallel::CommRecord& r = *call.record;
    io::CollectiveRow row;
    row.step = step;
    row.rank = rank;
    copy_name(row.group, call.group->comm->name());
    row.group_root = call.group->root;
    row.index = next_index[call.group]++;
    copy_name(row.collective, parallel::to_string(r.collective));
    row.bytes = r.bytes;
    row.blocking = r.blocking ? 1 : 0;
    row.arrive_s = r.start_s - step_start_s;
    row.compute_before_s = r.start_s - free_since(waits, r.start_s, step_start_s);
    row.wait_s = r.wait_start_s >= 0 ? r.start_s + r.seconds - r.wait_start_s : 0.0;
    row.seconds = r.seconds;
    rows_.push_back(row);
  }
}

}  // namespace sb::metrics
