// SPDX-License-Identifier: Apache-2.0
// CPU time, beside the wall clock of parallel/comm_stats.hpp: what a rank's work cost in CPU,
// whatever share of a core the scheduler gave it. Leaves out the wall clock.
#pragma once

#include <ctime>

namespace sb {

inline double cpu_clock_seconds(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// CPU time of every thread of this process (OpenMP's included).
inline double process_cpu_seconds() { return cpu_clock_seconds(CLOCK_PROCESS_CPUTIME_ID); }

// CPU time of the calling thread.
inline double thread_cpu_seconds() { return cpu_clock_seconds(CLOCK_THREAD_CPUTIME_ID); }

}  // namespace sb
