// SPDX-License-Identifier: Apache-2.0
// What giving memory back to the system costs when it is written again: ZeRO-2 and 3 give the
// pages of every reduced gradient range back (madvise MADV_DONTNEED) and the next micro-batch's
// backward faults them in anew. Timed here per page so the cost model can price it. Leaves out
// the kernels' own writes (kernel times).
#pragma once

#include <cstdint>

namespace sb::calibrate {

struct PageRefault {
  double seconds_per_page = 0;  // median over the rounds
  std::int64_t page_bytes = 0, pages = 0;
  int rounds = 0;
};

// Over `bytes` of anonymous memory: each round gives every page back in one call and writes
// one word of each again; the median round's seconds over its pages.
PageRefault measure_page_refault(std::int64_t bytes = 64LL << 20, int rounds = 5);

}  // namespace sb::calibrate
