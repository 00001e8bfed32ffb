// SPDX-License-Identifier: Apache-2.0
// The per-rank tables of a run (see rank_tables.hpp).
#include "train/rank_tables.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/statistics.hpp"
#include "parallel/gather_text.hpp"

namespace sb::train {

std::vector<io::TimelineRow> gather_timeline(parallel::Communicator& world, const std::vector<io::TimelineRow>& mine) {
  static_assert(std::is_trivially_copyable_v<io::TimelineRow>);
  const auto steps = mine.size(), ranks = static_cast<std::size_t>(world.size());
  std::vector<io::TimelineRow> by_rank(steps * ranks);
  world.all_gather(mine.data(), by_rank.data(), static_cast<std::int64_t>(steps * sizeof(io::TimelineRow)),
                   parallel::DataType::u8);
  std::vector<io::TimelineRow> rows;
  rows.reserve(by_rank.size());
  for (std::size_t s = 0; s < steps; ++s)
    for (std::size_t r = 0; r < ranks; ++r) rows.push_back(by_rank[r * steps + s]);
  return rows;
}

std::vector<io::CollectiveRow> gather_collectives(parallel::Communicator& world,
                                                const std::vector<io::CollectiveRow>& mine) {
  static_assert(std::is_trivially_copyable_v<io::CollectiveRow>);
  const std::string bytes(reinterpret_cast<const char*>(mine.data()), mine.size() * sizeof(io::CollectiveRow));
  std::vector<io::CollectiveRow> rows;
  for (const std::string& rank_bytes : parallel::gather_text(world, bytes, 0)) {
    const std::size_t first = rows.size();
    rows.resize(first + rank_bytes.size() / sizeof(io::CollectiveRow));
    std::memcpy(rows.data() + first, rank_bytes.data(), rank_bytes.size());
  }
  return rows;
}

std::vector<io::RankRow> rank_rows(const std::vector<io::TimelineRow>& timeline, const parallel::ProcessGrid& grid) {
  const auto ranks = static_cast<std::size_t>(grid.dp() * grid.tp() * grid.pp());
  const std::size_t steps = timeline.size() / ranks, first = steps > 1 ? 1 : 0;
  const auto at = [&](std::size_t step, std::size_t rank) -> const io::TimelineRow& {
    return timeline[step * ranks + rank];
  };
  std::vector<io::RankRow> rows;
  for (std::size_t r = 0; r < ranks; ++r) {
    std::vector<double> step_s, compute_s, comm_s, bubble_s, idle_s;
    for (std::size_t s = first; s < steps; ++s) {
      double slowest = 0;
      for (std::size_t q = 0; q < ranks; ++q) slowest = std::max(slowest, at(s, q).compute_s);
      const io::TimelineRow& t = at(s, r);
      const double idle = slowest - t.compute_s;
      step_s.push_back(t.step_time_s);
      compute_s.push_back(t.compute_s);
      comm_s.push_back(std::max(0.0, t.tp_comm_s + t.p2p_s + t.dp_comm_s - idle));
      bubble_s.push_back(t.bubble_s);
      idle_s.push_back(idle);
    }
    const auto [dp_rank, tp_rank, pp_rank] = grid.coordinates_of(static_cast<int>(r));
    rows.push_back({.rank = static_cast<std::int64_t>(r), .dp_rank = dp_rank, .tp_rank = tp_rank,
                    .pp_rank = pp_rank, .step_time_s = median(step_s), .compute_s = median(compute_s),
                    .comm_s = median(comm_s), .bubble_s = median(bubble_s), .idle_s = median(idle_s)});
  }
  return rows;
}

std::vector<io::MemoryRow> memory_rows(parallel::Communicator& world, const MemoryTracker& tracker) {
  const auto& usage = tracker.usage();
  const std::vector<std::int64_t> mine = {world.rank(),
                                          usage.peak_of(MemoryCategory::params),
                                          usage.peak_of(MemoryCategory::grads),
                                          usage.peak_of(MemoryCategory::optimizer),
                                          usage.peak_of(MemoryCategory::activations),
                                          usage.peak_of(MemoryCategory::workspace),
                                          usage.peak_of(MemoryCategory::comm),
                                          usage.total_peak,
                                          peak_rss_bytes()};
  const auto fields = static_cast<std::int64_t>(mine.size());
  std::vector<std::int64_t> all(mine.size() * static_cast<std::size_t>(world.size()));
  world.all_gather(mine.data(), all.data(), fields, parallel::DataType::i64);
  std::vector<io::MemoryRow> rows;
  for (int r = 0; r < world.size(); ++r) {
    const std::int64_t* m = all.data() + r * fields;
    rows.push_back({.rank = m[0], .params = m[1], .grads = m[2], .optimizer = m[3], .activations = m[4],
                    .workspace = m[5], .comm = m[6], .peak_tracked = m[7], .peak_rss = m[8]});
  }
  return rows;
}

}  // namespace sb::train
