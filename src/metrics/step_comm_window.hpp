// SPDX-License-Identifier: Apache-2.0
// The communication calls of one rank's step: every call its communicators recorded between
// begin_step() and now (parallel::CommStats), each beside the group it was made in. The Chrome
// trace (step_trace.hpp) and the collective log (collective_log.hpp) read the same window.
// Leaves out timing the step (train/distributed_step.hpp).
#pragma once

#include <cstddef>
#include <vector>

#include "parallel/communicator.hpp"
#include "parallel/process_grid.hpp"  // CommGroup

namespace sb::metrics {

using parallel::CommGroup;

// A call of the step: the record lives in the group's communicator until the next begin_step().
struct StepCall {
  const CommGroup* group = nullptr;
  const parallel::CommRecord* record = nullptr;
};

class StepCommWindow {
 public:
  // groups: each communicator must outlive the window.
  explicit StepCommWindow(std::vector<CommGroup> groups);

  // Before a step: forgets a communicator's records once they pass kKeptRecords (a long run
  // must not grow them without bound), then marks where each one's records stand.
  void begin_step();
  // The calls completed since begin_step(), in the order they were issued (their start_s):
  // within one group the order every rank of the group issued them in.
  std::vector<StepCall> calls() const;

  static constexpr std::size_t kKeptRecords = 4096;

 private:
  std::vector<CommGroup> groups_;
  std::vector<std::size_t> first_record_;  // per group, at begin_step()
};

}  // namespace sb::metrics
