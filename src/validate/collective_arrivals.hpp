// SPDX-License-Identifier: Apache-2.0
// Who a run's ranks waited for, collective by collective (/runs/<id>/collectives): at each
// collective of a group (an all-reduce, reduce-scatter, all-gather, broadcast or barrier; not
// the pipeline's sends and receives, which pair different stages), the rank that computed
// longest before it arrived last and the others waited for it, each for the difference. Per
// rank: how many such collectives it took part in after the first step, at what share it arrived
// last, how much later per step than the others' median, and what share of all the ranks' waits
// at collectives were waits for it. Leaves out judging stragglers (stragglers.hpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace sb::validate {

struct Arrivals {
  std::int64_t collectives = 0;  // the group collectives it took part in, the first step's left out
  double last_pct = 0;           // the share of them it arrived at last, the only rank to (ties: none last)
  // median over steps of the sum over the step's collectives of its compute before the call −
  // the others' median
  double late_by_s = 0;
  // of the waits the arrivals made (at each collective, the last rank's compute before it − each
  // other rank's), the share that were waits for this rank
  double waited_for_pct = 0;
  std::string groups;            // the communicators they were on, e.g. "dp" or "dp,tp"
};

// Per world rank; empty for a file without the table (written before it) or a run without
// collectives between ranks.
std::map<int, Arrivals> collective_arrivals(const std::filesystem::path& file, const std::string& run_id);

}  // namespace sb::validate
