// SPDX-License-Identifier: Apache-2.0
// What giving memory back to the system costs when it is used again: ZeRO-2 and 3 give the
// pages of every reduced gradient range back (madvise MADV_DONTNEED), as do 16-bit main
// gradients those added into them, and the next micro-batch's backward faults them in anew. Its
// kernels add into their gradients (dweight +=), so each page is read before it is written: two
// faults, the zero page's and then the copy's. Timed here per page, read then written, so the
// cost model can price it. Leaves out the kernels' own work (kernel times).
#pragma once

#include <cstdint>

namespace sb::calibrate {

struct PageRefault {
  double seconds_per_page = 0;  // median over the rounds
  std::int64_t page_bytes = 0, pages = 0;
  int rounds = 0;
};

// Over `bytes` of anonymous memory: each round gives every page back in one call and adds to
// one byte of each (a read, then a write); the median round's seconds over its pages.
PageRefault measure_page_refault(std::int64_t bytes = 64LL << 20, int rounds = 5);

}  // namespace sb::calibrate
