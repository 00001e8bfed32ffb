// SPDX-License-Identifier: Apache-2.0
// Stragglers of a run: a rank whose compute per step (the timeline's compute_cpu_s: its own
// work before and between its collectives, the time others wait for, at the share of a CPU
// it had; compute_s in files written before that field), divided step by step by the median
// of the other ranks of its pipeline stage in that same step, has a median ratio above 1 +
// threshold (20% by default, `inspect --straggler-threshold` sets it) and above 1 + the
// ratios' own spread across steps. CPU time, because ranks sharing a core with each other or
// with other jobs differ in wall time by the scheduler's share, not their work (even ranks 36%
// to 52% apart on a shared two-core machine); the ratio within each step, because a machine
// whose speed wanders slows every rank of a step alike. Steps of a few milliseconds are too
// short to judge on shared cores: a peer polling in MPI beside them moved gpt-nano's (5 ms)
// CPU time by up to 30% on a two-core guest, gpt-tiny's (230 ms) by under 10%.
// Read from /runs/<id>/timeline and /ranks; each named rank's arrivals at its collectives from
// /runs/<id>/collectives (collective_arrivals.hpp). Leaves out printing (cli/command_inspect.cpp).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "validate/collective_arrivals.hpp"

namespace sb::validate {

// A rank is named when it computes this much longer than its stage's other ranks at least.
inline constexpr double kStragglerThresholdPct = 20.0;

struct Straggler {
  int rank = 0, pp_rank = 0;
  std::int64_t steps = 0;      // steps after the first, over which the medians are taken
  double compute_s = 0;        // its median compute per step
  double others_s = 0;         // the median over steps of the stage's other ranks' median in the step
  double excess_pct = 0;       // median over steps of (compute / others' median in the step) − 1
  // 3 standard errors of that median: 3·1.2533·1.4826·MAD(ratios)/sqrt(steps), as a percentage
  double spread_pct = 0;
  std::string basis;  // the timeline field judged: compute_cpu_s, or compute_s in older files
  // how it met the others at its collectives: empty for files without /runs/<id>/collectives
  std::optional<Arrivals> arrivals;
};

// The run's stragglers, slowest first; none for a run of one rank per stage or without a
// timeline. UserError naming the file when the run is not in it.
std::vector<Straggler> find_stragglers(const std::filesystem::path& file, const std::string& run_id,
                                       double threshold_pct = kStragglerThresholdPct);

}  // namespace sb::validate
