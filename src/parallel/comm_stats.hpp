// SPDX-License-Identifier: Apache-2.0
// What a communicator measured: one record per completed call (collective, bytes, ranks,
// seconds, algorithm), with the nccl-tests bandwidths, and sums over a window (a step).
// Leaves out timing of compute, which the trainer's timeline owns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sb::parallel {

enum class Collective { all_reduce, reduce_scatter, all_gather, broadcast, send, recv, barrier };
std::string_view to_string(Collective collective);

struct CommRecord {
  Collective collective;
  std::int64_t bytes = 0;   // the nccl-tests "size" of the call (bandwidth.hpp)
  int ranks = 1;
  double start_s = 0;       // seconds on the process's steady clock (comm_clock_seconds)
  double seconds = 0;       // start to completion
  // when the rank began to wait for it: start_s for a blocking call, the first wait() on its
  // request for a non-blocking one, -1 when a test found it complete (the rank never waited)
  double wait_start_s = -1;
  bool blocking = true;
  std::string algorithm;    // e.g. "mpi", "ring", "nccl"
  double algbw_gbps = 0;    // bytes / seconds / 1e9
  double busbw_gbps = 0;    // algbw × the collective's bus factor
};

// Seconds since an arbitrary fixed point of the steady clock, shared by every record.
double comm_clock_seconds();

class CommStats {
 public:
  void record(CommRecord record);
  // A call that completed now: its seconds from start_s and its bandwidths set, then recorded.
  void record_completed(CommRecord record);
  const std::vector<CommRecord>& records() const { return records_; }
  void clear() { records_.clear(); }
  // Sums over the records from index `first` on (a step's window: remember records().size()).
  std::int64_t bytes_since(std::size_t first) const;
  double seconds_since(std::size_t first) const;
  // Turns recording on or off (microbenchmarks record their own; training records every call).
  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool enabled() const { return enabled_; }

 private:
  std::vector<CommRecord> records_;
  bool enabled_ = true;
};

}  // namespace sb::parallel
