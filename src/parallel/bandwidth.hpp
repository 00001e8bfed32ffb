// SPDX-License-Identifier: Apache-2.0
// The nccl-tests definitions of a collective's size and bandwidths, written once and shared by
// the communicators' records, `scalebench calibrate` and the cost model. Leaves out timing.
#pragma once

#include <cstdint>

#include "parallel/comm_stats.hpp"

namespace sb::parallel {

// nccl-tests (doc/PERFORMANCE.md), with n ranks and a call that took t seconds:
//   size ("bytes" of a call)
//     all_reduce        count × type size (the buffer every rank holds)
//     reduce_scatter    n × recv_count × type size (the full input buffer)
//     all_gather        n × send_count × type size (the full output buffer)
//     broadcast         count × type size
//     send, recv        count × type size
//     barrier           0
//   algbw = size / t
//   busbw = algbw × factor, factor:
//     all_reduce                   2(n−1)/n
//     reduce_scatter, all_gather   (n−1)/n
//     broadcast, send, recv        1
//     barrier                      0 (moves no data)
// busbw is the per-link bandwidth a ring-optimal algorithm achieves, so it compares with the
// hardware's peak whatever n is.
double bus_bandwidth_factor(Collective collective, int ranks);

// The size defined above, from the count a caller passes to the Communicator (all_reduce:
// count; reduce_scatter: recv_count; all_gather: send_count; the rest: count).
std::int64_t collective_bytes(Collective collective, std::int64_t count,
                              std::int64_t type_bytes, int ranks);

struct Bandwidth {
  double algbw_gbps = 0;  // bytes / seconds / 1e9
  double busbw_gbps = 0;  // algbw × bus_bandwidth_factor
};
// Zero bandwidths when seconds <= 0 (a call too fast for the clock says nothing).
Bandwidth collective_bandwidth(Collective collective, std::int64_t bytes, int ranks,
                               double seconds);

}  // namespace sb::parallel
