// SPDX-License-Identifier: Apache-2.0
// nccl-tests size and bus-bandwidth definitions (see bandwidth.hpp for the table).
#include "parallel/bandwidth.hpp"

#include "core/check.hpp"

namespace sb::parallel {

double bus_bandwidth_factor(Collective collective, int ranks) {
  SB_CHECK(ranks >= 1, "a collective needs at least one rank, got {}", ranks);
  const double n = ranks;
  switch (collective) {
    case Collective::all_reduce: return 2.0 * (n - 1.0) / n;
    case Collective::reduce_scatter:
    case Collective::all_gather: return (n - 1.0) / n;
    case Collective::broadcast:
    case Collective::send:
    case Collective::recv: return 1.0;
    case Collective::barrier: return 0.0;
  }
  SB_CHECK(false, "unknown collective {}", static_cast<int>(collective));
}

std::int64_t collective_bytes(Collective collective, std::int64_t count, std::int64_t type_bytes,
                              int ranks) {
  switch (collective) {
    case Collective::reduce_scatter:
    case Collective::all_gather: return static_cast<std::int64_t>(ranks) * count * type_bytes;
    case Collective::barrier: return 0;
    default: return count * type_bytes;
  }
}

Bandwidth collective_bandwidth(Collective collective, std::int64_t bytes, int ranks,
                               double seconds) {
  if (seconds <= 0) return {};
  const double algbw = static_cast<double>(bytes) / seconds / 1e9;
  return {algbw, algbw * bus_bandwidth_factor(collective, ranks)};
}

}  // namespace sb::parallel
