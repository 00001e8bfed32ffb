// SPDX-License-Identifier: Apache-2.0
// The per-rank tables of a run, gathered once after the last step so that timing never waits on
// a per-step collective: every rank's timeline rows, their per-rank medians (/runs/<id>/ranks),
// every rank's calls (/runs/<id>/collectives) and every rank's tracked memory (/runs/<id>/memory). Leaves out writing them (rank 0's
// RunRecord).
#pragma once

#include <vector>

#include "core/memory.hpp"
#include "io/results_file.hpp"
#include "parallel/communicator.hpp"
#include "parallel/process_grid.hpp"

namespace sb::train {

// Collective. Every rank's timeline rows (one per step; every rank ran the same steps),
// step-major, as the table.
std::vector<io::TimelineRow> gather_timeline(parallel::Communicator& world, const std::vector<io::TimelineRow>& mine);

// Per-rank medians over the steady steps (the first step pays page faults and thread start).
// idle is the wait for the slowest rank: max over ranks of compute − this rank's compute in
// the same step; it is taken out of comm, since a blocking collective waits for the last rank.
std::vector<io::RankRow> rank_rows(const std::vector<io::TimelineRow>& timeline, const parallel::ProcessGrid& grid);

// Collective. Every rank's rows of the collectives table, rank by rank, on world rank 0 (empty
// on the others).
std::vector<io::CollectiveRow> gather_collectives(parallel::Communicator& world, const std::vector<io::CollectiveRow>& mine);

// Collective. Every rank's peak tracked bytes per category and its peak resident set size.
std::vector<io::MemoryRow> memory_rows(parallel::Communicator& world, const MemoryTracker& tracker);

}  // namespace sb::train
