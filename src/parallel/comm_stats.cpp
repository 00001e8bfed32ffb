// SPDX-License-Identifier: Apache-2.0
// CommStats: the record list, its window sums and the shared steady clock.
#include "parallel/comm_stats.hpp"

#include <chrono>

#include "parallel/bandwidth.hpp"

namespace sb::parallel {

std::string_view to_string(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::all_gather: return "all_gather";
    case Collective::broadcast: return "broadcast";
    case Collective::send: return "send";
    case Collective::recv: return "recv";
    case Collective::barrier: return "barrier";
  }
  return "unknown";
}

double comm_clock_seconds() {
  // Fixed at the first call, so records of one process share an origin and stay small.
  static const auto origin = std::chrono::steady_clock::now();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - origin).count();
}

void CommStats::record(CommRecord record) {
  if (enabled_) records_.push_back(std::move(record));
}

void CommStats::record_completed(CommRecord record) {
  if (!enabled_) return;
  record.seconds = comm_clock_seconds() - record.start_s;
  const Bandwidth bandwidth = collective_bandwidth(record.collective, record.bytes, record.ranks, record.seconds);
  record.algbw_gbps = bandwidth.algbw_gbps;
  record.busbw_gbps = bandwidth.busbw_gbps;
  records_.push_back(std::move(record));
}

std::int64_t CommStats::bytes_since(std::size_t first) const {
  std::int64_t sum = 0;
  for (std::size_t i = first; i < records_.size(); ++i) sum += records_[i].bytes;
  return sum;
}

double CommStats::seconds_since(std::size_t first) const {
  double sum = 0;
  for (std::size_t i = first; i < records_.size(); ++i) sum += records_[i].seconds;
  return sum;
}

}  // namespace sb::parallel
