// SPDX-License-Identifier: Apache-2.0
// The calls of a step, from every communicator's records (see step_comm_window.hpp).
#include "metrics/step_comm_window.hpp"

#include <algorithm>
#include <utility>

namespace sb::metrics {

StepCommWindow::StepCommWindow(std::vector<CommGroup> groups)
    : groups_(std::move(groups)), first_record_(groups_.size(), 0) {}

void StepCommWindow::begin_step() {
  for (std::size_t k = 0; k < groups_.size(); ++k) {
    parallel::CommStats& stats = groups_[k].comm->stats();
    if (stats.records().size() > kKeptRecords) stats.clear();
    first_record_[k] = stats.records().size();
  }
}

std::vector<StepCall> StepCommWindow::calls() const {
  std::vector<StepCall> calls;
  for (std::size_t k = 0; k < groups_.size(); ++k) {
    const auto& records = groups_[k].comm->stats().records();
    for (std::size_t i = first_record_[k]; i < records.size(); ++i) calls.push_back({&groups_[k], &records[i]});
  }
  // records are kept in order of completion; a non-blocking call may complete after later ones
  std::stable_sort(calls.begin(), calls.end(),
                   [](const StepCall& a, const StepCall& b) { return a.record->start_s < b.record->start_s; });
  return calls;
}

}  // namespace sb::metrics
