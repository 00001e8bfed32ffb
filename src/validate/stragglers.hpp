// SPDX-License-Identifier: Apache-2.0
// Stragglers of a run: a rank whose compute per step (the timeline's compute_s: its own work
// before and between its collectives, the time others wait for) exceeds that of the other
// ranks of its pipeline stage by more than a threshold (20% by default, `inspect
// --straggler-threshold` sets it: ranks of an even run differ by 10% on a quiet machine with a
// core per rank, but have been seen 36% apart on a shared two-core CI machine) and more than
// the steps' own spread.
// Read from /runs/<id>/timeline and /ranks. Leaves out printing (cli/command_inspect.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace sb::validate {

// A rank is named when it computes this much longer than its stage's other ranks at least.
inline constexpr double kStragglerThresholdPct = 20.0;

struct Straggler {
  int rank = 0, pp_rank = 0;
  std::int64_t steps = 0;      // steps after the first, over which the medians are taken
  double compute_s = 0;        // its median compute per step
  double others_s = 0;         // the median over the stage's other ranks of theirs
  double excess_pct = 0;       // (compute_s − others_s) / others_s
  // 3 standard errors of the difference of the medians: 3·1.2533·1.4826·sqrt(MAD_rank²/n +
  // MAD_others²/n_others), relative to others_s
  double spread_pct = 0;
};

// The run's stragglers, slowest first; none for a run of one rank per stage or without a
// timeline. UserError naming the file when the run is not in it.
std::vector<Straggler> find_stragglers(const std::filesystem::path& file, const std::string& run_id,
                                       double threshold_pct = kStragglerThresholdPct);

}  // namespace sb::validate
